from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from webui import views as webui_views

urlpatterns = [
    path("admin/", admin.site.urls),
    # Operations endpoints (docs/SOURCES.md, "Operating"): outside the UI's namespace, no trailing slash.
    path("healthz", webui_views.healthz, name="healthz"),
    path("metrics", webui_views.metrics, name="metrics"),
    # The REST API (webui/api), its OpenAPI 3 schema and the interactive docs (Swagger UI, served locally).
    path("api/v1/", include("webui.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api_docs"),
    path("", include("webui.urls")),
]
