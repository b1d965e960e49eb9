"""Read models of the stored analyses, one module per topic; import the topic module, nothing is re-exported here.

- ``apps``: the app list (search box, the API's filters and orderings, app id matching, cluster and heuristic
  choices) and every stored attempt of an app id;
- ``report``: one app's report (findings, stages, executors, metrics, properties), its attempts and the
  ResourceManager's view of it;
- ``dashboard``: the dashboard's counts, latest and worst apps and top offenders, and a user's totals;
- ``flows``: flow executions, job, template and flow history, and the comparison of two flow runs;
- ``gate``: the CI gate's target and verdict, severity names and the configured heuristic codes;
- ``sources``: the Sources page's polling state of each source, its masked parameters and failed apps.

Selectors only read. Every one takes keyword-only arguments and returns querysets, model rows or small frozen
dataclasses whose related rows are already loaded, so templates never trigger extra queries. How the data reads
(charts, sentences, answer shapes) is webui's (``webui.presenters``, the API's serializers).
"""
