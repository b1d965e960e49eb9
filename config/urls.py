from django.contrib import admin
from django.urls import include, path

from webui import views as webui_views

urlpatterns = [
    path("admin/", admin.site.urls),
    # Operations endpoints (docs/SOURCES.md, "Operating"): outside the UI's namespace, no trailing slash.
    path("healthz", webui_views.healthz, name="healthz"),
    path("metrics", webui_views.metrics, name="metrics"),
    path("", include("webui.urls")),
]
