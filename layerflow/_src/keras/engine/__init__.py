"""The Keras engine: Layer, Model, Sequential, the functional API, InputSpec, summary."""
