"""The Keras API: engine (Layer, Model, Sequential, functional), layers, training, saving."""
