"""A durable, time-zone-correct scheduler for Django and Celery."""
