"""Example tasks used by the demo."""

import logging

from celery import shared_task

logger = logging.getLogger(__name__)


@shared_task(name="demo.ping")
def ping(**kwargs: object) -> str:
    logger.info("demo.ping ran with %s", kwargs)
    return "pong"
