/* Hindsight charts: draws every <canvas data-chart="..."> with the vendored Chart.js (no CDN).
 *
 * The numbers come from a <script type="application/json"> the server wrote with Django's json_script: the one
 * named by the canvas's data-source, else the one inside the canvas's <figure>. They are read with JSON.parse and
 * shown only as chart text (canvas), never as HTML. Every chart already has a text summary and a table of the same
 * numbers on the page; its box stays hidden, and the page is unchanged, when Chart.js did not load or a chart
 * fails. This is the only script the pages use.
 */
(function () {
  "use strict";
  var Chart = window.Chart;
  if (typeof Chart !== "function" || !document.querySelectorAll) {
    return;
  }

  var INK = "#1d2330";
  var MUTED = "#5b6475";
  var GRID = "#e3e6eb";
  var BAR = "#5b7fb8";
  var MARK = "#b3261e";
  // Okabe-Ito colours (distinguishable with colour-blindness); each series is also named in the legend/tooltip.
  var KIND_COLOURS = {
    running: "#0072b2",
    released: "#009e73",
    memory: "#d55e00",
    lost: "#cc79a7",
    removed: "#7f7f7f"
  };

  Chart.defaults.color = MUTED;
  Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", "DejaVu Sans", Arial, sans-serif';
  Chart.defaults.animation = false;

  // Milliseconds as the server writes them: "850 ms", "12.5 s", "3 min 12 s", "2 h 5 min".
  function duration(ms) {
    if (ms === null || ms === undefined || !isFinite(ms)) {
      return "—";
    }
    if (Math.abs(ms) < 1000) {
      return Math.round(ms) + " ms";
    }
    if (Math.abs(ms) < 60000) {
      return (ms / 1000).toFixed(1) + " s";
    }
    var total = Math.round(ms / 1000);
    var hours = Math.floor(total / 3600);
    var minutes = Math.floor((total % 3600) / 60);
    return hours ? hours + " h " + minutes + " min" : minutes + " min " + (total % 60) + " s";
  }

  // A compact duration for axis ticks: "850 ms", "12 s", "4.5 min", "2 h", "1 h 15 min".
  // An x axis of seconds since the app started, labelled as short durations.
  function timeAxis(title, stepS) {
    return {
      min: 0,
      grid: { color: GRID },
      title: { display: true, text: title },
      ticks: {
        maxRotation: 0,
        stepSize: stepS,
        callback: function (value) {
          return shortDuration(value * 1000);
        }
      }
    };
  }

  function shortDuration(ms) {
    if (ms === 0) {
      return "0";
    }
    if (Math.abs(ms) < 1000) {
      return Math.round(ms) + " ms";
    }
    if (Math.abs(ms) < 60000) {
      return +(ms / 1000).toFixed(1) + " s";
    }
    if (Math.abs(ms) < 3600000) {
      return +(ms / 60000).toFixed(1) + " min";
    }
    var wholeMinutes = Math.round(ms / 60000);
    var hours = Math.floor(wholeMinutes / 60);
    return wholeMinutes % 60 ? hours + " h " + (wholeMinutes % 60) + " min" : hours + " h";
  }

  // A step in milliseconds giving at most about `ticks` round-duration ticks up to `maxMs`.
  var STEPS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 15e3, 3e4, 6e4, 12e4, 3e5, 6e5, 9e5,
    18e5, 36e5, 72e5, 108e5, 216e5, 432e5, 864e5];
  function durationStep(maxMs, ticks) {
    for (var i = 0; i < STEPS_MS.length; i++) {
      if (maxMs / STEPS_MS[i] <= ticks) {
        return STEPS_MS[i];
      }
    }
    return Math.ceil(maxMs / ticks / 864e5) * 864e5;
  }

  function largest(values) {
    return values.reduce(function (top, value) {
      return value !== null && value > top ? value : top;
    }, 0);
  }

  function number(value, digits) {
    if (value === null || value === undefined) {
      return "—";
    }
    return Number(value).toLocaleString("en-US", { maximumFractionDigits: digits });
  }

  function dataFor(canvas) {
    var id = canvas.getAttribute("data-source");
    var element = id ? document.getElementById(id) : null;
    if (!element) {
      var figure = canvas.closest("figure");
      element = figure ? figure.querySelector('script[type="application/json"]') : null;
    }
    return element ? JSON.parse(element.textContent) : null;
  }

  function narrow() {
    return window.matchMedia && window.matchMedia("(max-width: 600px)").matches;
  }

  // Where a duration falls on the category axis: its bin's index plus its log-scaled share of the bin.
  function binPosition(edges, value) {
    if (value === null || value === undefined || edges.length < 2) {
      return null;
    }
    for (var i = 0; i < edges.length - 1; i++) {
      var low = edges[i];
      var high = edges[i + 1];
      if (value < high || i === edges.length - 2) {
        var share = 0.5;
        if (high > low) {
          share = low > 0 ? Math.log(value / low) / Math.log(high / low) : (value - low) / (high - low);
        }
        return i - 0.5 + Math.min(1, Math.max(0, share));
      }
    }
    return null;
  }

  // Draws a labelled vertical line for the median and the longest task (text, not only colour).
  var markers = {
    id: "hindsightMarkers",
    afterDatasetsDraw: function (chart, _args, options) {
      var marks = options && options.marks;
      if (!marks || !marks.length) {
        return;
      }
      var ctx = chart.ctx;
      var area = chart.chartArea;
      var x = chart.scales.x;
      ctx.save();
      ctx.font = "12px " + Chart.defaults.font.family;
      marks.forEach(function (mark, i) {
        if (mark.position === null) {
          return;
        }
        var px = x.getPixelForValue(mark.position);
        ctx.strokeStyle = MARK;
        ctx.lineWidth = 2;
        ctx.setLineDash(mark.dash || []);
        // Labels sit in the padding above the plot, one row each, so they never cover a bar or each other.
        var row = area.top - 6 - 15 * (marks.length - 1 - i);
        ctx.beginPath();
        ctx.moveTo(px, row + 3);
        ctx.lineTo(px, area.bottom);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = INK;
        var width = ctx.measureText(mark.label).width;
        var left = Math.min(Math.max(area.left, px - width / 2), area.right - width);
        ctx.fillText(mark.label, left, row);
      });
      ctx.restore();
    }
  };

  function histogram(canvas, data) {
    var edges = data.edges_ms;
    var counts = data.counts;
    var labels = counts.map(function (_count, i) {
      return edges[i] === edges[i + 1] ? duration(edges[i]) : duration(edges[i]) + " – " + duration(edges[i + 1]);
    });
    var ticks = counts.map(function (_count, i) {
      return shortDuration(edges[i]);
    });
    return {
      type: "bar",
      data: {
        labels: labels,
        // Empty bins are gaps (null) so that minBarLength keeps a single straggler's bar visible.
        datasets: [{
          label: "Tasks",
          data: counts.map(function (count) {
            return count > 0 ? count : null;
          }),
          backgroundColor: BAR,
          categoryPercentage: 1,
          barPercentage: 0.92,
          minBarLength: 3
        }]
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        layout: { padding: { top: 40, right: 4 } },
        scales: {
          x: {
            grid: { display: false },
            title: { display: !narrow(), text: "Task duration (each bar starts at its label; bars widen by a constant factor)" },
            ticks: {
              autoSkip: true,
              maxRotation: 0,
              callback: function (_value, index) {
                return ticks[index];
              }
            }
          },
          y: {
            beginAtZero: true,
            grid: { color: GRID },
            title: { display: true, text: "Tasks" },
            ticks: { precision: 0 }
          }
        },
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              title: function (items) {
                return labels[items[0].dataIndex];
              },
              label: function (item) {
                return number(item.raw, 0) + " task" + (item.raw === 1 ? "" : "s");
              }
            }
          },
          hindsightMarkers: {
            marks: [
              { position: binPosition(edges, data.median_ms), label: "median " + duration(data.median_ms), dash: [5, 4] },
              { position: binPosition(edges, data.max_ms), label: "longest " + duration(data.max_ms) }
            ]
          }
        }
      },
      plugins: [markers]
    };
  }

  function timeline(canvas, data) {
    var bars = data.bars;
    var labels = bars.map(function (bar) {
      return bar.executor;
    });
    var datasets = data.kinds.map(function (kind) {
      return {
        label: kind.label,
        kind: kind.key,
        data: bars.map(function (bar) {
          return bar.kind === kind.key ? [bar.start_s, Math.max(bar.end_s, bar.start_s)] : null;
        }),
        backgroundColor: KIND_COLOURS[kind.key] || KIND_COLOURS.removed,
        grouped: false,
        barPercentage: 0.8,
        categoryPercentage: 1,
        minBarLength: 2
      };
    });
    var kindLabels = {};
    data.kinds.forEach(function (kind) {
      kindLabels[kind.key] = kind.label;
    });
    // One row per executor, tall enough to tell rows apart, inside the sized box.
    canvas.parentNode.style.height = Math.max(160, bars.length * 14 + 110) + "px";
    var stepS = durationStep(1000 * largest(bars.map(function (bar) {
      return bar.end_s;
    })), narrow() ? 4 : 8) / 1000;
    return {
      type: "bar",
      data: { labels: labels, datasets: datasets },
      options: {
        indexAxis: "y",
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: timeAxis("Time since the app started", stepS),
          y: {
            grid: { display: false },
            title: { display: !narrow(), text: "Executor" },
            ticks: { autoSkip: bars.length > 60 && narrow(), font: { size: 10 } }
          }
        },
        plugins: {
          legend: { position: "top", align: "start", labels: { boxWidth: 14 } },
          tooltip: {
            callbacks: {
              title: function (items) {
                var bar = bars[items[0].dataIndex];
                return "Executor " + bar.executor + (bar.host ? " on " + bar.host : "");
              },
              label: function (item) {
                var bar = bars[item.dataIndex];
                return duration(bar.start_s * 1000) + " to " + duration(bar.end_s * 1000) + " (" +
                  duration((bar.end_s - bar.start_s) * 1000) + ")";
              },
              afterLabel: function (item) {
                var bar = bars[item.dataIndex];
                var text = kindLabels[bar.kind] || "";
                return bar.reason ? text + ": " + (bar.reason.length > 120 ? bar.reason.slice(0, 119) + "…" : bar.reason) : text;
              }
            }
          }
        }
      }
    };
  }

  function line(data, series, formatTick, formatValue, step) {
    var labels = data.labels;
    return {
      type: "line",
      data: {
        labels: labels,
        datasets: series.map(function (s) {
          return {
            label: s.label,
            data: s.values,
            borderColor: s.colour,
            backgroundColor: s.colour,
            borderDash: s.dash || [],
            pointStyle: s.point || "circle",
            pointRadius: labels.length > 60 ? 2 : 4,
            pointHoverRadius: 6,
            borderWidth: 2,
            spanGaps: false,
            tension: 0
          };
        })
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: "index", intersect: false },
        scales: {
          x: {
            grid: { display: false },
            ticks: {
              autoSkip: true,
              maxRotation: 0,
              callback: function (_value, index) {
                return data.ticks[index];
              }
            }
          },
          y: { beginAtZero: true, grid: { color: GRID }, ticks: { callback: formatTick, stepSize: step } }
        },
        plugins: {
          legend: {
            display: series.length > 1,
            position: "top",
            align: "start",
            labels: { usePointStyle: true, boxWidth: 8, boxHeight: 8 }
          },
          tooltip: {
            callbacks: {
              title: function (items) {
                var i = items[0].dataIndex;
                return labels[i] + " · " + data.runs[i];
              },
              label: function (item) {
                return item.dataset.label + ": " + formatValue(item.raw);
              }
            }
          }
        }
      }
    };
  }

  function gbHours(value) {
    return value === null || value === undefined ? "—" : number(value, 2) + " GB-h";
  }

  // Slowdown attribution: one horizontal bar per cause, its signed effect on the runtime (right: slower, left:
  // faster); the sign is in the axis, the tooltip's words and the panel's table, not only in the colour.
  function attribution(canvas, data) {
    var effects = data.effect_ms;
    canvas.parentNode.style.height = Math.max(140, effects.length * 30 + 70) + "px";
    var top = Math.max(1, largest(effects.map(Math.abs)));
    return {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: [{
          label: "Effect on the runtime",
          data: effects,
          backgroundColor: effects.map(function (ms) {
            return ms > 0 ? "#d55e00" : "#0072b2";
          }),
          borderColor: INK,
          borderWidth: effects.map(function (ms) {
            return ms > 0 ? 0 : 1;
          }),
          barPercentage: 0.7
        }]
      },
      options: {
        indexAxis: "y",
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: {
            suggestedMin: -top * 0.1,
            grid: { color: GRID },
            title: { display: true, text: "Seconds the cause added (right) or saved (left)" },
            ticks: {
              maxRotation: 0,
              callback: function (value) {
                return (value > 0 ? "+" : "") + shortDuration(value);
              }
            }
          },
          y: { grid: { display: false } }
        },
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              label: function (item) {
                var ms = item.raw;
                return ms >= 0 ? duration(ms) + " slower" : duration(-ms) + " faster";
              }
            }
          }
        }
      }
    };
  }

  // Sizes as the server writes them: "512 B", "1.5 KiB", "12.0 MiB", "3.2 GiB".
  function dataSize(bytes) {
    if (bytes === null || bytes === undefined || !isFinite(bytes)) {
      return "—";
    }
    var units = [["TiB", 1099511627776], ["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];
    for (var i = 0; i < units.length; i++) {
      if (Math.abs(bytes) >= units[i][1]) {
        return (bytes / units[i][1]).toFixed(1) + " " + units[i][0];
      }
    }
    return Math.round(bytes) + " B";
  }

  // Executor anomaly: one point per sampled task (x: when it finished, y: the feature's value), the selected
  // executor's tasks as larger triangles in another colour, so shape and colour both tell them apart.
  function executorAnomaly(canvas, data) {
    var format = data.unit === "ms" ? duration : data.unit === "bytes" ? dataSize : function (value) {
      return number(value, 2);
    };
    var tick = data.unit === "ms" ? shortDuration : format;
    var values = data.selected.v.concat(data.others.v);
    // Round steps in the feature's own unit (a power of 1024 for sizes), about five up the axis.
    var yStep;
    if (data.unit === "ms") {
      yStep = durationStep(Math.max(1, largest(values)), 5);
    } else if (data.unit === "bytes") {
      var top = Math.max(1, largest(values));
      var base = Math.pow(1024, Math.max(0, Math.floor(Math.log(top) / Math.log(1024))));
      yStep = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500].map(function (f) {
        return f * base;
      }).filter(function (step) {
        return top / step <= 6;
      })[0];
    }
    function points(part) {
      return part.t.map(function (ms, i) {
        return { x: ms / 1000, y: part.v[i] };
      });
    }
    var ends = data.selected.t.concat(data.others.t);
    var stepS = durationStep(Math.max(1, largest(ends)), narrow() ? 4 : 6) / 1000;
    return {
      type: "scatter",
      data: {
        datasets: [
          {
            label: "Executor " + data.executor + "'s tasks",
            data: points(data.selected),
            pointStyle: "triangle",
            pointRadius: 5,
            pointHoverRadius: 7,
            backgroundColor: MARK,
            borderColor: INK,
            borderWidth: 1,
            order: 0
          },
          {
            label: "Other executors' tasks",
            data: points(data.others),
            pointStyle: "circle",
            pointRadius: 2,
            pointHoverRadius: 4,
            backgroundColor: "rgba(0, 114, 178, 0.45)",
            borderColor: "rgba(0, 114, 178, 0.45)",
            order: 1
          }
        ]
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: Object.assign({ type: "linear" }, timeAxis("Time since the app started (task end)", stepS)),
          y: {
            beginAtZero: true,
            grid: { color: GRID },
            title: { display: !narrow(), text: data.label },
            ticks: { callback: tick, stepSize: yStep }
          }
        },
        plugins: {
          legend: { position: "top", align: "start", labels: { usePointStyle: true, boxWidth: 8, boxHeight: 8 } },
          tooltip: {
            callbacks: {
              label: function (item) {
                return item.dataset.label + ": " + format(item.raw.y) + " (ended at " + duration(item.raw.x * 1000) + ")";
              }
            }
          }
        }
      }
    };
  }

  // Straggler hosts: a host's tasks per z-score bin (bars) and the fitted distribution's expectation (a dashed
  // line with its own legend entry, so the two are told apart without colour).
  function hostHistogram(canvas, data) {
    return {
      type: "bar",
      data: {
        labels: data.labels,
        datasets: [
          {
            type: "bar",
            label: "Tasks",
            data: data.counts.map(function (count) {
              return count > 0 ? count : null;
            }),
            backgroundColor: BAR,
            categoryPercentage: 1,
            barPercentage: 0.92,
            minBarLength: 2,
            order: 1
          },
          {
            type: "line",
            label: data.family ? "Fitted " + data.family : "Fitted",
            // Far outside the fit's support the expectation is ~0: no line there, rather than one along the axis.
            data: data.expected.map(function (value) {
              return value !== null && value >= 0.05 ? value : null;
            }),
            borderColor: MARK,
            backgroundColor: MARK,
            borderDash: [6, 4],
            borderWidth: 2,
            pointRadius: 0,
            pointHoverRadius: 4,
            spanGaps: false,
            tension: 0.3,
            order: 0
          }
        ]
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: "index", intersect: false },
        scales: {
          x: {
            grid: { display: false },
            title: { display: !narrow(), text: "z-score among sibling tasks (right: slower)" },
            ticks: {
              autoSkip: false,
              maxRotation: 0,
              callback: function (_value, index) {
                return index % (narrow() ? 8 : 4) === 0 ? data.ticks[index] : "";
              }
            }
          },
          y: { beginAtZero: true, grid: { color: GRID }, title: { display: true, text: "Tasks" }, ticks: { precision: 0 } }
        },
        plugins: {
          legend: { position: "top", align: "start", labels: { boxWidth: 14 } },
          tooltip: {
            callbacks: {
              title: function (items) {
                return "z " + data.labels[items[0].dataIndex];
              },
              label: function (item) {
                return item.dataset.label + ": " + number(item.raw, item.datasetIndex === 0 ? 0 : 1);
              }
            }
          }
        }
      }
    };
  }

  // A host's trend: one series per window (the second dashed, with triangles).
  function hostTrend(data, key, label, format, step) {
    var styles = [{ colour: "#0072b2" }, { colour: "#d55e00", dash: [6, 4], point: "triangle" }];
    var series = data.series.map(function (s, i) {
      var style = styles[i % styles.length];
      return { label: label + ", " + s.window, values: s[key], colour: style.colour, dash: style.dash, point: style.point };
    });
    return line(data, series, format, format, step);
  }

  // What if: the estimated runtime against the executor count (a line through the replayed points), the run's
  // own count and the ideal count as marked points with their own legend entries (shape and words, not only
  // colour), and the critical path as a dashed level no count goes below.
  function whatIf(canvas, data) {
    var counts = data.executors;
    var runtimes = data.runtime_ms;
    function at(count) {
      var i = counts.indexOf(count);
      return i < 0 ? [] : [{ x: count, y: runtimes[i] }];
    }
    var curve = counts.map(function (count, i) {
      return { x: count, y: runtimes[i] };
    });
    var last = counts[counts.length - 1];
    var yStep = durationStep(Math.max(1, largest(runtimes)), narrow() ? 4 : 6);
    return {
      type: "scatter",
      data: {
        datasets: [
          {
            label: "Estimated runtime",
            data: curve,
            showLine: true,
            borderColor: "#0072b2",
            backgroundColor: "#0072b2",
            pointRadius: 3,
            borderWidth: 2,
            order: 2
          },
          {
            label: "This run (" + data.own_executors + ")",
            data: at(data.own_executors),
            pointStyle: "triangle",
            pointRadius: 8,
            clip: false, // a mark at the axis's first or last count is drawn whole
            backgroundColor: MARK,
            borderColor: INK,
            borderWidth: 1,
            order: 0
          },
          {
            label: "Ideal (" + data.ideal_executors + ")",
            data: at(data.ideal_executors),
            pointStyle: "rectRot",
            pointRadius: 8,
            clip: false,
            backgroundColor: "#009e73",
            borderColor: INK,
            borderWidth: 1,
            order: 1
          },
          {
            label: "Critical path",
            data: [{ x: Math.min(1, counts[0]), y: data.critical_path_ms }, { x: last, y: data.critical_path_ms }],
            showLine: true,
            borderColor: MUTED,
            backgroundColor: MUTED,
            borderDash: [6, 4],
            borderWidth: 2,
            pointRadius: 0,
            pointHoverRadius: 0,
            order: 3
          }
        ]
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        layout: { padding: { right: 10 } },
        scales: {
          x: {
            type: "linear",
            min: Math.min(1, counts[0]),
            grid: { color: GRID },
            title: { display: true, text: data.unit === "containers" ? "Containers" : "Executors" },
            ticks: { precision: 0, maxRotation: 0 }
          },
          y: {
            beginAtZero: true,
            grid: { color: GRID },
            title: { display: !narrow(), text: "Runtime" },
            ticks: { callback: shortDuration, stepSize: yStep }
          }
        },
        plugins: {
          legend: { position: "top", align: "start", labels: { usePointStyle: true, boxWidth: 8, boxHeight: 8 } },
          tooltip: {
            filter: function (item) {
              return item.datasetIndex !== 3 || item.dataIndex === 0;
            },
            callbacks: {
              label: function (item) {
                if (item.datasetIndex === 3) {
                  return "Critical path (unlimited executors): " + duration(item.raw.y);
                }
                return item.dataset.label + ": " + number(item.raw.x, 0) + " " + data.unit + ", " + duration(item.raw.y);
              }
            }
          }
        }
      }
    };
  }

  var builders = {
    "what-if": whatIf,
    "host-histogram": hostHistogram,
    "host-trend-mean": function (_canvas, data) {
      return hostTrend(data, "mean", "Mean z", function (value) {
        return number(value, 2);
      });
    },
    "host-trend-level": function (_canvas, data) {
      return hostTrend(data, "level", "Level", function (value) {
        return number(value, 0);
      }, 1);
    },
    attribution: attribution,
    "executor-anomaly": executorAnomaly,
    histogram: histogram,
    timeline: timeline,
    "history-runtime": function (_canvas, data) {
      return line(
        data,
        [{ label: "Runtime", values: data.runtime_ms, colour: "#0072b2" }],
        shortDuration,
        duration,
        durationStep(largest(data.runtime_ms), narrow() ? 4 : 6)
      );
    },
    "history-gb-hours": function (_canvas, data) {
      return line(
        data,
        [
          { label: "Used", values: data.used_gb_hours, colour: "#0072b2" },
          { label: "Wasted", values: data.wasted_gb_hours, colour: "#d55e00", dash: [6, 4], point: "triangle" }
        ],
        function (value) {
          return number(value, 1);
        },
        gbHours
      );
    },
    "history-score": function (_canvas, data) {
      return line(
        data,
        [{ label: "Score", values: data.score, colour: "#7a4fa3" }],
        function (value) {
          return number(value, 0);
        },
        function (value) {
          return number(value, 0);
        }
      );
    }
  };

  Array.prototype.forEach.call(document.querySelectorAll("canvas[data-chart]"), function (canvas) {
    var build = builders[canvas.getAttribute("data-chart")];
    var box = canvas.parentNode;
    try {
      var data = dataFor(canvas);
      if (!build || !data) {
        return;
      }
      box.hidden = false; // shown before drawing so Chart.js measures the sized box
      new Chart(canvas, build(canvas, data));
    } catch (error) {
      box.hidden = true; // the summary and the table remain
      if (window.console) {
        window.console.error("Hindsight chart not drawn:", error);
      }
    }
  });
})();
