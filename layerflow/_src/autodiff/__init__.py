"""The tape, the @op decorator, custom_gradient and the numerical gradient check."""
