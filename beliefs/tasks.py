"""Background jobs (django-tasks, database backend): run by `python manage.py worker`.

The jobs only name a row; the work and its rules live in the services. Services are imported
inside each job because the services enqueue these jobs themselves.
"""

from __future__ import annotations

from django_tasks import task


@task()
def deliver_webhook(delivery_id: int) -> str:
    from beliefs.services.webhooks import delivery_attempt

    return delivery_attempt(delivery_id)


@task()
def send_email(notification_id: int) -> str:
    from beliefs.services.notify import email_send

    return email_send(notification_id)
