"""Write the shipped sample event logs (samples/) by running small, real PySpark applications.

Each scenario runs in its own Python process (so its own JVM, since driver memory is fixed at JVM start),
in local mode with task retries allowed, and writes its event log into a scratch directory. The log is then
moved into samples/ under the scenario's name and Hadoop's ``.crc`` side files are dropped.

    .venv/bin/pip install -r requirements-spark.txt && .venv/bin/python scripts/generate_samples.py

The recurring set (samples/recurring/: scheduled runs of three Airflow DAGs, with injected slowdowns listed in
its manifest.json) runs all its apps in one more process, one SparkContext after another; see samples/README.md.
The cluster set (samples/cluster/: runs of one Airflow task on a real Spark standalone cluster of eight one-core
workers on 127.0.0.2-9, one of them slow, one stage slowed in some runs) starts that cluster, runs its apps from
one more process, and stops every process it started.

Options: ``--only NAME`` (repeatable) to regenerate some scenarios, ``--recurring`` to regenerate only the
recurring set, ``--cluster`` only the cluster set (the default is everything), ``--out DIR`` (default samples/).
The logs contain this machine's paths (working dir, Python install) as Spark logs them; nothing secret.
"""

# The code is in the samplegen package next to this file (scenarios, recurring, cluster, cluster_runner); this
# entry point parses the options, and is also what the sets' child processes run, with a hidden option.

from __future__ import annotations

import argparse
from pathlib import Path

from samplegen.cluster import run_cluster_in_this_process
from samplegen.cluster_runner import generate_cluster
from samplegen.common import REPO
from samplegen.recurring import generate_recurring, run_recurring_in_this_process
from samplegen.scenarios import SCENARIOS, generate, run_in_this_process


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "samples")
    parser.add_argument("--only", action="append", choices=[s.name for s in SCENARIOS])
    parser.add_argument("--recurring", action="store_true", help="(re)generate the recurring set")
    parser.add_argument("--run-one", help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--cluster", action="store_true", help="(re)generate the cluster set")
    parser.add_argument("--run-recurring", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--run-cluster", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--master", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one:
        run_in_this_process(args.run_one, args.log_dir)
        return
    if args.run_recurring:
        run_recurring_in_this_process(args.run_recurring)
        return
    if args.run_cluster:
        run_cluster_in_this_process(args.run_cluster, args.master)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    everything = not args.only and not args.recurring and not args.cluster
    for scenario in SCENARIOS:
        if everything or (args.only and scenario.name in args.only):
            generate(scenario, args.out)
    if everything or args.recurring:
        generate_recurring(args.out)
    if everything or args.cluster:
        generate_cluster(args.out)


if __name__ == "__main__":
    main()
