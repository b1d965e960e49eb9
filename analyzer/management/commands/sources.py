"""``manage.py sources add|list|remove|load|retry``: the clusters and sources Hindsight watches.

* ``add NAME [--spark-history URL] [--resourcemanager URL ...] [--jobhistory URL] [--eventlog-dir PATH ...]
  [--auth none|basic|bearer|spnego --username U --password-env VAR --token-env VAR] [--ca-bundle FILE]
  [--insecure]``: secrets are read from the environment variables named, never from the command line.
* ``list [--format text|json]``: secrets shown as ``********``.
* ``remove NAME`` and ``load FILE [--prune]`` (see docs/SOURCES.md for the file).
* ``retry CLUSTER [APP_ID ...]``: the cluster's apps that failed to fetch (all of them, or the ids given, every
  attempt) get a fresh budget and are analyzed at the next pass (``poll``) or sweep (Celery beat).

Errors go to stderr in one line, ``hindsight: <reason>``. Exit status: 0 done, 2 bad input (nothing changed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson
from django.core.management.base import BaseCommand, CommandParser

from analyzer.ingestion.claims import claims_retry, cluster_failed_claims
from analyzer.ingestion.sources import (
    SourceConfigError,
    cluster_add,
    cluster_list,
    cluster_remove,
    secret_from_env,
    source_describe,
    sources_load,
)
from analyzer.management.commands.analyze import printable
from analyzer.models import Cluster
from fetchers.http import AUTH_MODES

EXIT_BAD_INPUT: Final = 2


class Command(BaseCommand):
    help = "Add, list, remove or load (from a YAML file) the clusters and sources to watch."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="add|list|remove|load|retry")
        add = actions.add_parser("add", help="add a cluster with its sources")
        add.add_argument("name", metavar="NAME")
        add.add_argument("--spark-history", metavar="URL", help="Spark History Server address")
        add.add_argument(
            "--spark-history-fetch-mode",
            choices=("auto", "log", "rest"),
            help="auto (default): the event log, or the REST views when the server will not give it; log; rest",
        )
        add.add_argument(
            "--resourcemanager",
            action="extend",
            nargs="+",
            default=[],
            metavar="URL",
            help="ResourceManager(s); all for HA",
        )
        add.add_argument("--jobhistory", metavar="URL", help="MapReduce JobHistory Server address")
        add.add_argument(
            "--eventlog-dir",
            action="extend",
            nargs="+",
            default=[],
            metavar="PATH",
            help="event-log directory (or several)",
        )
        add.add_argument("--auth", choices=AUTH_MODES, help="HTTP authentication")
        add.add_argument("--username", help="user name for basic authentication")
        add.add_argument("--password-env", metavar="VAR", help="environment variable holding the password")
        add.add_argument("--token-env", metavar="VAR", help="environment variable holding the bearer token")
        add.add_argument("--ca-bundle", metavar="FILE", help="CA bundle to verify the servers' certificates with")
        add.add_argument("--insecure", action="store_true", help="do not verify TLS certificates")
        add.add_argument(
            "--webhdfs-url",
            action="extend",
            nargs="+",
            default=[],
            metavar="URL",
            help="NameNode web address(es) for hdfs:// event-log directories (all of them for HA)",
        )
        add.add_argument("--hdfs-user", metavar="NAME", help="HDFS user for WebHDFS simple authentication")
        add.add_argument("--poll-interval", type=int, metavar="S", help="poll each source every S seconds (10)")
        add.add_argument(
            "--safety-margin", type=int, metavar="S", help="windows end S seconds before now (60); see docs/SOURCES.md"
        )
        listing = actions.add_parser("list", help="list clusters and sources (secrets masked)")
        listing.add_argument("--format", choices=("text", "json"), default="text", dest="output_format")
        remove = actions.add_parser("remove", help="remove a cluster, its sources and checkpoints")
        remove.add_argument("name", metavar="NAME")
        load = actions.add_parser("load", help="create or update clusters from a YAML file")
        load.add_argument("file", metavar="FILE", type=Path)
        load.add_argument("--prune", action="store_true", help="remove clusters the file does not name")
        retry = actions.add_parser("retry", help="analyze again the apps that failed to fetch")
        retry.add_argument("name", metavar="CLUSTER")
        retry.add_argument("app_ids", nargs="*", metavar="APP_ID", help="only these apps (default: every failed one)")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        try:
            if action == "add":
                self._add(options)
            elif action == "list":
                self._list(options["output_format"])
            elif action == "remove":
                cluster_remove(options["name"])
                self.stdout.write(f"removed cluster {printable(options['name'])}")
            elif action == "retry":
                self._retry(options["name"], options["app_ids"])
            else:
                self._load(options["file"], prune=options["prune"])
        except SourceConfigError as error:
            self.stderr.write(f"hindsight: {printable(error)}", style_func=lambda s: s)
            raise SystemExit(EXIT_BAD_INPUT) from None

    def _add(self, options: dict[str, Any]) -> None:
        http: dict[str, Any] = {}
        if options["auth"]:
            http["auth"] = options["auth"]
        if options["username"]:
            http["username"] = options["username"]
        if options["password_env"]:
            http["password"] = secret_from_env("--password-env", options["password_env"])
        if options["token_env"]:
            http["token"] = secret_from_env("--token-env", options["token_env"])
        if options["ca_bundle"]:
            http["ca_bundle"] = options["ca_bundle"]
        if options["insecure"]:
            http["verify"] = False
        cluster = cluster_add(
            options["name"],
            spark_history=options["spark_history"],
            resourcemanagers=options["resourcemanager"],
            jobhistory=options["jobhistory"],
            eventlog_dirs=options["eventlog_dir"],
            http_params=http,
            poll_interval_s=options["poll_interval"],
            safety_margin_s=options["safety_margin"],
            webhdfs_urls=options["webhdfs_url"],
            hdfs_user=options["hdfs_user"],
            spark_history_fetch_mode=options["spark_history_fetch_mode"],
        )
        self.stdout.write(f"added cluster {cluster.name} with {cluster.sources.count()} source(s)")

    def _list(self, output_format: str) -> None:
        clusters = cluster_list()
        if output_format == "json":
            for cluster in clusters:
                shown = {
                    "name": cluster.name,
                    "jobhistory_url": cluster.jobhistory_url or None,
                    "sources": [source_describe(source) for source in cluster.sources.all()],
                }
                self.stdout.write(orjson.dumps(shown).decode())
            return
        if not clusters:
            self.stdout.write("no clusters; add one with: manage.py sources add NAME ...")
        for cluster in clusters:
            jobhistory = f" (JobHistory {printable(cluster.jobhistory_url)})" if cluster.jobhistory_url else ""
            self.stdout.write(f"{cluster.name}{jobhistory}")
            for source in cluster.sources.all():
                described: dict[str, Any] = source_describe(source)["params"]
                params = ", ".join(f"{k}={_value(v)}" for k, v in sorted(described.items()))
                state = "enabled" if source.enabled else "disabled"
                checkpoint = source.checkpoint_ms if source.checkpoint_ms is not None else "none"
                timing = f"every {source.poll_interval_s} s, margin {source.safety_margin_s} s"
                self.stdout.write(
                    f"  {source.backend} [{state}, {timing}, checkpoint {checkpoint}]: {printable(params)}"
                )
                if source.last_error:
                    self.stdout.write(f"    last error: {printable(source.last_error)}")

    def _retry(self, name: str, app_ids: list[str]) -> None:
        cluster = Cluster.objects.filter(name=name).first()
        if cluster is None:
            raise SourceConfigError(f"no cluster named {name!r}")
        count = claims_retry(cluster_failed_claims(name, app_ids))
        self.stdout.write(f"{count} app(s) of {printable(name)} to analyze again")

    def _load(self, path: Path, *, prune: bool) -> None:
        result = sources_load(path, prune=prune)
        for verb, names in (
            ("created", result.created),
            ("updated", result.updated),
            ("unchanged", result.unchanged),
            ("removed", result.removed),
        ):
            if names:
                self.stdout.write(f"{verb}: {', '.join(names)}")


def _value(value: Any) -> str:
    return ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
