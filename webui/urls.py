from django.urls import path

from webui import hosts as host_views
from webui import views

app_name = "webui"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("apps/", views.app_list, name="app_list"),
    path("apps/<int:pk>/", views.app_report, name="app_report"),
    # Ids and user names are data that may hold slashes: they come as query parameters.
    path("flows/run/", views.flow_execution, name="flow_execution"),
    path("history/", views.history, name="history"),
    path("compare/", views.compare, name="compare"),
    path("users/", views.user_page, name="user"),
    path("sources/", views.sources, name="sources"),
    path("attribution/", views.attribution_versions, name="attribution_versions"),
    # A host name is data: the detail is ?host= on the same page.
    path("hosts/", host_views.hosts, name="hosts"),
    path("help/", views.help_index, name="help_index"),
    path("help/<str:code>/", views.help_heuristic, name="help_heuristic"),
]
