"""Example tasks and seed schedules for the demo."""
