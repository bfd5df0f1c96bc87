"""Root URLs: the public pages of each app, the admin, and the JSON API under /api/."""
from django.contrib import admin
from django.urls import include, path

from .api import api

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("", include("evaluator.urls")),
    path("", include("traces.urls")),
    path("", include("leaderboard.urls")),
]
