from django.urls import path

from webui import views

app_name = "webui"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("apps/", views.app_list, name="app_list"),
    path("apps/<int:pk>/", views.app_report, name="app_report"),
    path("sources/", views.sources, name="sources"),
    path("help/", views.help_index, name="help_index"),
    path("help/<str:code>/", views.help_heuristic, name="help_heuristic"),
]
