from django.contrib import admin
from django.urls import path

from scheduler_app.views import metrics

urlpatterns = [
    path("admin/", admin.site.urls),
    path("metrics", metrics, name="metrics"),
]
