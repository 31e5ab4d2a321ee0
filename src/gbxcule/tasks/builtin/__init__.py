"""The built-in tasks: task files like a user's, loaded by name (``gbxcule.tasks.load``)."""
