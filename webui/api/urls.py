from django.urls import path, re_path

from webui.api import executors as executor_api
from webui.api import hosts, views
from webui.api import stages as stage_anomalies

app_name = "api"
urlpatterns = [
    path("apps", views.AppListView.as_view(), name="app_list"),
    # path: an app id is data and may hold any character, a slash included.
    # Before the detail, whose path would take "<app id>/attribution" for an app id.
    re_path(r"^apps/(?P<app_id>.+)/attribution$", views.AppAttributionView.as_view(), name="app_attribution"),
    re_path(
        r"^apps/(?P<app_id>.+)/executor-anomalies$",
        executor_api.AppExecutorAnomalyView.as_view(),
        name="app_executor_anomalies",
    ),
    path("apps/<path:app_id>", views.AppDetailView.as_view(), name="app_detail"),
    path("heuristics", views.HeuristicCatalogView.as_view(), name="heuristics"),
    path("clusters", views.ClusterListView.as_view(), name="clusters"),
    path("clusters/<str:name>/retry", views.ClusterRetryView.as_view(), name="cluster_retry"),
    path("gate", views.GateView.as_view(), name="gate"),
    path("analyze", views.AnalyzeView.as_view(), name="analyze"),
    path("flow-executions", views.FlowExecutionView.as_view(), name="flow_execution"),
    path("history", views.HistoryView.as_view(), name="history"),
    path("compare", views.CompareView.as_view(), name="compare"),
    path("stage-anomalies", stage_anomalies.StageAnomaliesView.as_view(), name="stage_anomalies"),
    path("hosts", hosts.HostsView.as_view(), name="hosts"),
    # A host name is data and may hold any character.
    re_path(r"^hosts/(?P<host>.+)$", hosts.HostDetailView.as_view(), name="host_detail"),
    # [\s\S], not ".": a path with a newline in it (%0A) is an unknown endpoint too, not the web UI's HTML 404.
    re_path(r"^(?P<rest>[\s\S]*)$", views.unknown_endpoint),
]
