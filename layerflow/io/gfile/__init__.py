"""`tf.io.gfile`: TF's file API on the local file system (`GFile`, `exists`, `walk`, ...)."""

from layerflow._src.saving.gfile import (
    GFile,
    copy,
    exists,
    get_registered_schemes,
    glob,
    isdir,
    join,
    listdir,
    makedirs,
    mkdir,
    remove,
    rename,
    rmtree,
    stat,
    walk,
)

__all__ = [
    "GFile", "copy", "exists", "get_registered_schemes", "glob", "isdir", "join", "listdir",
    "makedirs", "mkdir", "remove", "rename", "rmtree", "stat", "walk",
]  # fmt: skip
