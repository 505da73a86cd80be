"""A URLconf that includes the scheduler's URLs the way a project does."""

from django.urls import include, path

urlpatterns = [path("scheduler/", include("scheduler_app.urls"))]
