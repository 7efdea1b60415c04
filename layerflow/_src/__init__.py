"""The implementation; the public API is the facade in `layerflow/`."""
