"""AutoGraph: converts Python control flow on tensors into `tf.cond` / `tf.while_loop` by a
source-to-source transform of the user's functions (Python's `ast`), as TF's AutoGraph does.

`conversion.convert(fn)` is the entry point for `tf.function`; `control_flow` and `py_builtins`
hold the operators generated code calls; `jumps` and `lowering` are the AST passes.
"""
