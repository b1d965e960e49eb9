"""Hindsight's pure analysis: everything computed from the typed app model, with no Django and no database.

``analysis.pipeline`` runs one app attempt through the heuristics and computes its metrics (``analysis.metrics``,
``analysis.metrics_mapreduce``), stage and executor summaries (``analysis.summaries``) and job info
(``analysis.jobinfo``). The research analyses over many apps are libraries over numpy and pandas:
``analysis.attribution`` (why is this run slower than usual? Griffin), ``analysis.hosts`` (which hosts are
stragglers? Ouyang et al.), ``analysis.executors`` (which executor of this app is anomalous? Basu et al.) and
``analysis.stages`` (which stage of a recurring job is the outlier? CloudDiag). The Django app ``analyzer`` stores
and reads their results; nothing here imports it.
"""
