from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from webui import views as webui_views
from webui.middleware import page_login_required

urlpatterns = [
    path("admin/", admin.site.urls),
    # Signing in and out (token mode needs it for every page; webui/templates/registration/login.html). Django's
    # views: the `next` redirect only goes to this site's own host, and signing out is a POST (CSRF-protected).
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # Operations endpoints (docs/SOURCES.md, "Operating"): outside the UI's namespace, no trailing slash.
    path("healthz", webui_views.healthz, name="healthz"),
    path("metrics", webui_views.metrics, name="metrics"),
    # The REST API (webui/api), its OpenAPI 3 schema and the interactive docs (Swagger UI, served locally; the split
    # view serves its start-up script as a file, so the Content-Security-Policy needs no inline script).
    path("api/v1/", include("webui.api.urls")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path(
        "api/docs/",
        page_login_required(
            SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="webui/swagger_ui.html")
        ),
        name="api_docs",
    ),
    path("", include("webui.urls")),
]
