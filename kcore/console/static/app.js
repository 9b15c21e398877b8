// kcore console: a page of plain JS over the broker's /api endpoints.
// No framework and no build step; charts are SVG drawn here. Data from the
// broker goes into the page as text nodes only (never as HTML).
"use strict";

const view = document.getElementById("view");
const errorBox = document.getElementById("error");
// Live views refresh this often: the broker samples its counters once a second.
const REFRESH_MS = 2000;
let refreshTimer = null;
let renderToken = 0;

// -- helpers -----------------------------------------------------------------------------
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function api(method, path, body) {
  const options = { method, headers: {} };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    const name = data && data.error ? data.error : `HTTP ${response.status}`;
    throw new Error(`${name}: ${data && data.message ? data.message : response.statusText}`);
  }
  return data;
}

function showError(error) {
  errorBox.textContent = error instanceof Error ? error.message : String(error);
  errorBox.hidden = false;
}
function clearError() { errorBox.hidden = true; errorBox.textContent = ""; }

function notice(text) { return el("div", { class: "notice", role: "status" }, text); }

function bytes(n) {
  if (n === null || n === undefined) return "-";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}
function rate(n) { return n >= 100 ? Math.round(n).toLocaleString() : n.toFixed(1); }
function num(n) { return n === null || n === undefined ? "-" : Number(n).toLocaleString(); }
function when(ms) { return ms === null || ms === undefined ? "-" : new Date(ms).toISOString().replace("T", " ").replace("Z", " UTC"); }
function duration(s) {
  const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
  return d ? `${d}d ${h}h` : h ? `${h}h ${m}m` : `${m}m ${Math.floor(s % 60)}s`;
}
function enc(s) { return encodeURIComponent(s); }
function cell(value, cls) { return el("td", { class: cls }, value); }
function table(id, headers, rows) {
  return el("table", { id },
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { class: h.endsWith("#") ? "num" : null }, h.replace(/#$/, ""))))),
    el("tbody", {}, rows));
}
function card(label, value, id) {
  return el("div", { class: "card" }, el("div", { class: "label" }, label), el("div", { class: "value", id }, value));
}

// -- charts ------------------------------------------------------------------------------
const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

// series: [{name, color, points: [[epoch seconds, value], ...]}]
function lineChart(id, series, format) {
  const width = 800, height = 200, left = 60, bottom = 20, top = 8, right = 10;
  const all = series.flatMap((s) => s.points);
  const chart = svg("svg", { id, viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img" });
  const box = el("div", { class: "chart" },
    el("div", { class: "legend" }, series.map((s) => el("span", {}, el("i", { style: `background:${s.color}` }), s.name))),
    chart);
  if (!all.length) {
    chart.append(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle", fill: "#5b6677" }, "no samples yet"));
    return box;
  }
  const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]), t0 + 1);
  const vmax = Math.max(...all.map((p) => p[1]), 1) * 1.1;
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (width - left - right);
  const y = (v) => top + (1 - v / vmax) * (height - top - bottom);
  for (const frac of [0, 0.5, 1]) {
    const v = vmax * frac;
    chart.append(svg("line", { x1: left, x2: width - right, y1: y(v), y2: y(v), stroke: "#dde2ea" }));
    chart.append(svg("text", { x: left - 4, y: y(v) + 4, "text-anchor": "end", "font-size": 11, fill: "#5b6677" }, format(v)));
  }
  chart.append(svg("text", { x: left, y: height - 4, "font-size": 11, fill: "#5b6677" }, new Date(t0 * 1000).toLocaleTimeString()));
  chart.append(svg("text", { x: width - right, y: height - 4, "font-size": 11, fill: "#5b6677", "text-anchor": "end" },
    new Date(t1 * 1000).toLocaleTimeString()));
  for (const s of series) {
    if (!s.points.length) continue;
    const d = s.points.map((p, i) => `${i ? "L" : "M"}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(" ");
    chart.append(svg("path", { d, fill: "none", stroke: s.color, "stroke-width": 2, "data-series": s.name,
      "vector-effect": "non-scaling-stroke" }));
  }
  return box;
}

// -- overview ----------------------------------------------------------------------------
function brokerLabel(info) {
  document.getElementById("broker-label").textContent = `broker ${info.broker_id} · cluster ${info.cluster_id} · v${info.version}`;
}

async function overviewPage() {
  const [info, tp] = await Promise.all([api("GET", "/api/overview"), api("GET", "/api/throughput")]);
  brokerLabel(info);
  const points = tp.points;
  return el("section", { id: "overview" },
    el("h2", {}, "Overview"),
    el("div", { class: "cards" },
      card("Version", info.version, "ov-version"),
      card("Uptime", duration(info.uptime_s), "ov-uptime"),
      card("Brokers", info.brokers.length, "ov-brokers"),
      card("Topics", info.topics, "ov-topics"),
      card("Partitions", info.partitions, "ov-partitions"),
      card("Under-replicated", info.under_replicated, "ov-under-replicated"),
      card("Offline", info.offline, "ov-offline"),
      card("Consumer groups", info.groups, "ov-groups"),
      card("Bytes in/s", bytes(info.rates.bytes_in), "ov-bytes-in"),
      card("Bytes out/s", bytes(info.rates.bytes_out), "ov-bytes-out"),
      card("Messages in/s", rate(info.rates.messages_in), "ov-messages-in"),
      card("Size on disk", bytes(info.size_bytes), "ov-size")),
    el("h3", {}, "Throughput (last 5 minutes)"),
    lineChart("throughput-chart", [
      { name: "bytes in/s", color: "#2458b3", points: points.map((p) => [p.at, p.bytes_in]) },
      { name: "bytes out/s", color: "#c77c02", points: points.map((p) => [p.at, p.bytes_out]) },
    ], bytes),
    lineChart("messages-chart", [
      { name: "messages in/s", color: "#2e8540", points: points.map((p) => [p.at, p.messages_in]) },
    ], rate),
    el("h3", {}, "Brokers"),
    table("brokers", ["Id", "Host", "Port#", "Rack"], info.brokers.map((b) =>
      el("tr", { "data-broker": b.id }, cell(b.id + (b.id === info.controller_id ? " (controller)" : "")),
        cell(b.host), cell(b.port, "num"), cell(b.rack || "-")))));
}

// -- topics ------------------------------------------------------------------------------
async function topicsPage() {
  const data = await api("GET", "/api/topics");
  const form = el("form", { id: "create-topic", class: "inline" },
    el("label", {}, "Name", el("input", { name: "name", required: true, pattern: "[a-zA-Z0-9._\\-]+" })),
    el("label", {}, "Partitions", el("input", { name: "partitions", type: "number", min: 1, value: 1 })),
    el("label", {}, "Replication factor", el("input", { name: "replication_factor", type: "number", min: 1, value: 1 })),
    el("label", {}, "Configs (k=v, comma-separated)", el("input", { name: "configs", placeholder: "cleanup.policy=compact" })),
    el("button", { type: "submit" }, "Create topic"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const f = new FormData(form);
    const configs = {};
    for (const pair of String(f.get("configs") || "").split(",").map((s) => s.trim()).filter(Boolean)) {
      const at = pair.indexOf("=");
      configs[pair.slice(0, at < 0 ? pair.length : at).trim()] = at < 0 ? "" : pair.slice(at + 1).trim();
    }
    await act(() => api("POST", "/api/topics", { name: f.get("name"), partitions: Number(f.get("partitions")),
      replication_factor: Number(f.get("replication_factor")), configs }), () => { location.hash = `#/topics/${enc(f.get("name"))}`; });
  });
  const rows = data.topics.map((t) => el("tr", { "data-topic": t.name },
    el("td", {}, el("a", { href: `#/topics/${enc(t.name)}` }, t.name), t.internal ? el("span", { class: "tag" }, " internal") : null),
    cell(t.partitions, "num"), cell(t.replication_factor, "num"), cell(t.under_replicated, "num"),
    cell(bytes(t.size_bytes), "num"), cell(rate(t.rates.messages_in), "num"), cell(bytes(t.rates.bytes_in) + "/s", "num"),
    cell(bytes(t.rates.bytes_out) + "/s", "num"),
    el("td", { class: "schema" }, topicSchemaCell(t.schemas)),
    cell(Object.entries(t.configs).map(([k, v]) => `${k}=${v}`).join(", ") || "-")));
  return el("section", { id: "topics-page" }, el("h2", {}, "Topics"), form,
    table("topics", ["Topic", "Partitions#", "Replicas#", "Under-replicated#", "Size#", "Msgs in/s#", "In#", "Out#", "Schema", "Overrides"], rows),
    data.truncated ? el("p", { class: "muted" }, "Only the first topics are listed.") : null);
}

async function topicPage(name) {
  const t = await api("GET", `/api/topics/${enc(name)}`);
  const partitions = t.partitions.map((p) => el("tr", { "data-partition": p.partition },
    cell(p.partition, "num"), cell(p.leader, "num"), cell(p.replicas.join(", ")), cell(p.isr.join(", ")),
    cell(num(p.log_start_offset), "num"), cell(num(p.log_end_offset), "num"), cell(num(p.high_watermark), "num"),
    cell(num(p.segments), "num"), cell(bytes(p.size_bytes), "num"),
    el("td", {}, p.local ? el("a", { href: `#/topics/${enc(name)}/messages?partition=${p.partition}` }, "messages") : "-")));
  const configs = t.configs.map((c) => el("tr", { "data-config": c.name, class: c.source === "override" ? "override" : null },
    cell(c.name), cell(c.value === null ? "-" : c.value), cell(c.source)));
  const editor = el("form", { id: "config-form", class: "inline" },
    el("label", {}, "Config", el("select", { name: "name", id: "config-name" }, t.configs.map((c) => el("option", { value: c.name }, c.name)))),
    el("label", {}, "Value", el("input", { name: "value", id: "config-value" })),
    el("button", { type: "submit", id: "config-set" }, "Set"),
    el("button", { type: "button", class: "secondary", id: "config-delete", onclick: () => changeConfig(name, { delete: [editor.elements.name.value] }) },
      "Reset to default"));
  editor.addEventListener("submit", (event) => {
    event.preventDefault();
    changeConfig(name, { set: { [editor.elements.name.value]: editor.elements.value.value } });
  });
  const remove = el("button", { type: "button", class: "danger", id: "delete-topic", onclick: async () => {
    if (!window.confirm(`Delete topic ${name} and all its data?`)) return;
    await act(() => api("DELETE", `/api/topics/${enc(name)}`), () => { location.hash = "#/topics"; });
  } }, "Delete topic");
  const trim = deleteRecordsForm(name, t.partitions);
  return el("section", { id: "topic-page", "data-topic": name },
    el("h2", {}, `Topic ${name}`, t.internal ? el("span", { class: "tag" }, " internal") : null),
    el("div", { class: "cards" }, card("Partitions", t.partitions.length), card("Size here", bytes(t.size_bytes)),
      card("Messages in/s", rate(t.rates.messages_in)), card("Bytes in/s", bytes(t.rates.bytes_in)), card("Bytes out/s", bytes(t.rates.bytes_out))),
    tableLine(t.table),
    el("p", {}, el("a", { href: `#/topics/${enc(name)}/messages?partition=0`, id: "browse-link" }, "Browse messages"), " · ", remove),
    el("h3", {}, "Partitions"),
    table("partitions", ["Partition#", "Leader#", "Replicas", "ISR", "Log start#", "Log end#", "High watermark#", "Segments#", "Size#", ""], partitions),
    el("h3", {}, "Delete records"),
    el("p", { class: "muted" }, "Like kcore delete-records: the records below the offset are deleted for good; consumers then start at it."),
    trim, el("div", { id: "delete-records-result" }),
    el("h3", {}, "Configs"), editor,
    table("configs", ["Name", "Value", "Source"], configs));
}

// The topic's Iceberg table as this broker writes it (docs/tables.md), when it writes one.
function tableLine(table) {
  if (!table) return null;
  const last = table.last_commit_ms ? new Date(table.last_commit_ms).toISOString() : "none yet";
  return el("p", { id: "topic-table", "data-lag": table.lag },
    `Iceberg table ${table.name}: ${num(table.lag)} offsets behind the log, ${num(table.records)} records in ${num(table.commits)} commits here, last ${last}`,
    table.commit_errors ? el("span", { class: "tag" }, ` ${num(table.commit_errors)} failed`) : null);
}

// DeleteRecords from the topic page, after a confirmation: one partition or all, up to an offset or the high watermark.
function deleteRecordsForm(topic, partitions) {
  const form = el("form", { id: "delete-records-form", class: "inline" },
    el("label", {}, "Partition", el("select", { name: "partition" }, el("option", { value: "" }, "all"),
      partitions.map((p) => el("option", { value: p.partition }, p.partition)))),
    el("label", {}, "Below offset", el("input", { name: "offset", type: "number", min: 0, placeholder: "high watermark" })),
    el("button", { type: "submit", class: "danger", id: "delete-records" }, "Delete records"));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const f = form.elements;
    const offset = f.offset.value === "" ? -1 : Number(f.offset.value);
    const which = f.partition.value === "" ? "every partition" : `partition ${f.partition.value}`;
    const below = offset < 0 ? "its high watermark (all its records)" : `offset ${offset}`;
    if (!window.confirm(`Delete the records of ${topic}, ${which}, below ${below}? This cannot be undone.`)) return;
    const body = { offset };
    if (f.partition.value !== "") body.partitions = [Number(f.partition.value)];
    let result;
    await act(async () => { result = await api("POST", `/api/topics/${enc(topic)}/delete-records`, body); }, async () => {
      await route();
      const failed = result.partitions.filter((p) => p.error);
      const box = document.getElementById("delete-records-result");
      if (box) box.replaceChildren(notice(`Records deleted: ${result.partitions.length - failed.length} partition(s).`),
        table("delete-records-table", ["Partition#", "Low watermark#", "Error"], result.partitions.map((p) =>
          el("tr", { "data-partition": p.partition }, cell(p.partition, "num"), cell(p.error ? "-" : num(p.low_watermark), "num"), cell(p.error || "-")))));
      if (failed.length) showError(new Error(`${failed[0].error}: records of ${failed.length} partition(s) not deleted`));
    });
  });
  return form;
}

async function changeConfig(topic, change) {
  await act(() => api("PUT", `/api/topics/${enc(topic)}/configs`, change), () => route());
}

// Runs a change; its error goes to the banner, success re-renders.
async function act(call, then) {
  clearError();
  try { await call(); } catch (error) { showError(error); return; }
  then();
}

// -- messages ----------------------------------------------------------------------------
function renderData(data) {
  if (!data || data.type === "null") return el("span", { class: "muted" }, "null");
  return el("div", { class: `data ${data.type}`, "data-type": data.type },
    el("span", { class: "tag" }, `${data.type} · ${bytes(data.size)}${data.truncated ? " · cut" : ""}`), el("pre", {}, data.text));
}

function messageRows(records) {
  return records.map((r) => el("tr", { class: "message", "data-offset": r.offset },
    cell(r.offset, "num"), cell(when(r.timestamp)),
    el("td", { class: "key" }, renderData(r.key)), el("td", { class: "value" }, renderData(r.value)),
    el("td", { class: "headers" }, r.headers.length ? r.headers.map((h) => el("div", { class: "header" }, `${h.key}: `,
      h.value.type === "null" ? "null" : h.value.text)) : el("span", { class: "muted" }, "-"))));
}

async function messagesPage(topic, query) {
  const t = await api("GET", `/api/topics/${enc(topic)}`);
  const partition = query.get("partition") || "0";
  const params = new URLSearchParams();
  for (const key of ["offset", "timestamp", "limit"]) if (query.get(key)) params.set(key, query.get(key));
  const search = query.get("q");
  let result;
  if (search) {
    params.set("q", search);
    params.set("in", query.get("in") || "both");
    result = await api("GET", `/api/topics/${enc(topic)}/partitions/${enc(partition)}/search?${params}`);
  } else {
    result = await api("GET", `/api/topics/${enc(topic)}/partitions/${enc(partition)}/messages?${params}`);
  }
  const go = (changes) => {
    const next = new URLSearchParams({ partition });
    for (const [k, v] of Object.entries(changes)) if (v !== "" && v !== null && v !== undefined) next.set(k, v);
    location.hash = `#/topics/${enc(topic)}/messages?${next}`;
  };
  const browse = el("form", { id: "browse-form", class: "inline" },
    el("label", {}, "Partition", el("select", { name: "partition" }, t.partitions.filter((p) => p.local).map((p) =>
      el("option", { value: p.partition, selected: String(p.partition) === partition }, p.partition)))),
    el("label", {}, "From offset", el("input", { name: "offset", type: "number", value: query.get("offset") || "" })),
    el("label", {}, "or from time", el("input", { name: "time", type: "datetime-local", step: 1 })),
    el("label", {}, "Limit", el("input", { name: "limit", type: "number", min: 1, max: 500, value: query.get("limit") || 50 })),
    el("button", { type: "submit" }, "Browse"));
  browse.addEventListener("submit", (event) => {
    event.preventDefault();
    const f = browse.elements;
    const ts = f.time.value ? String(new Date(f.time.value).getTime()) : "";
    const next = new URLSearchParams({ partition: f.partition.value });
    if (ts) next.set("timestamp", ts); else if (f.offset.value) next.set("offset", f.offset.value);
    next.set("limit", f.limit.value);
    location.hash = `#/topics/${enc(topic)}/messages?${next}`;
  });
  const finder = el("form", { id: "search-form", class: "inline" },
    el("label", {}, "Search text", el("input", { name: "q", value: search || "" })),
    el("label", {}, "in", el("select", { name: "in" }, ["both", "key", "value"].map((v) => el("option", { value: v, selected: v === (query.get("in") || "both") }, v)))),
    el("button", { type: "submit" }, "Search"),
    el("span", { class: "muted" }, "scans the last 10,000 records below the high watermark"));
  finder.addEventListener("submit", (event) => { event.preventDefault(); go({ q: finder.elements.q.value, in: finder.elements.in.value }); });
  const summary = search
    ? `${result.records.length} match(es) for “${search}” in ${num(result.scanned)} records, offsets ${result.start_offset}–${result.next_offset - 1}${result.complete ? "" : " (stopped early)"}`
    : `${result.records.length} record(s) from offset ${result.start_offset}; partition holds ${result.log_start_offset}–${result.high_watermark - 1}`;
  return el("section", { id: "messages-page", "data-topic": topic },
    el("h2", {}, el("a", { href: `#/topics/${enc(topic)}` }, topic), ` · partition ${partition}`),
    browse, finder, el("p", { id: "messages-summary", class: "muted" }, summary),
    table("messages", ["Offset#", "Timestamp", "Key", "Value", "Headers"], messageRows(result.records)),
    !search && result.next_offset < result.high_watermark
      ? el("button", { id: "next-page", type: "button", onclick: () => go({ offset: result.next_offset, limit: query.get("limit") || "" }) }, "Next page")
      : null);
}

// -- groups ------------------------------------------------------------------------------
async function groupsPage() {
  const data = await api("GET", "/api/groups");
  return el("section", { id: "groups-page" }, el("h2", {}, "Consumer groups"),
    table("groups", ["Group", "State", "Protocol type", "Members#", "Partitions#", "Lag#"], data.groups.map((g) =>
      el("tr", { "data-group": g.group_id }, el("td", {}, el("a", { href: `#/groups/${enc(g.group_id)}` }, g.group_id)),
        cell(g.state), cell(g.protocol_type || "-"), cell(g.members, "num"), cell(g.partitions, "num"), cell(num(g.lag), "num")))),
    data.groups.length ? null : el("p", { class: "muted" }, "No consumer groups are coordinated by this broker."),
    await shareGroupsSection());
}

// Share groups (KIP-932): records in flight (acquired, or waiting to be
// acquired again) and lag of the share-partitions this broker leads.
async function shareGroupsSection() {
  const data = await api("GET", "/api/share-groups");
  const rows = data.groups.flatMap((g) => (g.partitions.length ? g.partitions : [null]).map((p) =>
    el("tr", { "data-share-group": g.group_id }, cell(g.group_id), cell(g.state), cell(g.members, "num"),
      cell(p ? `${p.topic}-${p.partition}` : "-"), cell(p ? num(p.start_offset) : "-", "num"),
      cell(p ? num(p.in_flight) : "-", "num"), cell(p ? num(p.acquired) : "-", "num"),
      el("td", { class: "num lag" }, p ? num(p.lag) : "-"))));
  return el("section", { id: "share-groups" }, el("h2", {}, "Share groups"),
    table("share-groups-table", ["Group", "State", "Members#", "Share-partition", "Start offset#", "In flight#",
      "Acquired#", "Lag#"], rows),
    data.groups.length ? null : el("p", { class: "muted" }, "No share groups on this broker."));
}

function groupOffsets(g) {
  return table("group-offsets", ["Topic", "Partition#", "Committed#", "End offset#", "Lag#", "Member"], g.offsets.map((o) =>
    el("tr", { "data-topic": o.topic, "data-partition": o.partition },
      cell(o.topic), cell(o.partition, "num"), cell(num(o.committed_offset), "num"), cell(num(o.end_offset), "num"),
      el("td", { class: "num lag" }, num(o.lag)), cell(o.member_id || "-"))));
}

function lagChart(g) {
  return lineChart("lag-chart", [{ name: "total lag (messages)", color: "#b3261e", points: g.lag_history }], (v) => num(Math.round(v)));
}

async function groupPage(groupId) {
  const g = await api("GET", `/api/groups/${enc(groupId)}`);
  const topics = [...new Set(g.offsets.map((o) => o.topic))];
  const form = el("form", { id: "reset-form", class: "inline" },
    el("label", {}, "Topic", el("input", { name: "topic", list: "group-topics", value: topics[0] || "", required: true })),
    el("datalist", { id: "group-topics" }, topics.map((t) => el("option", { value: t }))),
    el("label", {}, "Reset to", el("select", { name: "strategy" },
      [["earliest", "earliest"], ["latest", "latest"], ["offset", "offset"], ["timestamp", "timestamp (ms)"], ["shift", "shift by"]]
        .map(([v, label]) => el("option", { value: v }, label)))),
    el("label", {}, "Value", el("input", { name: "value", type: "number" })),
    el("button", { type: "submit", id: "reset-dry-run", class: "secondary" }, "Dry run"),
    el("button", { type: "button", id: "reset-execute", disabled: true }, "Execute"));
  const plan = el("div", { id: "reset-plan" });
  const body = () => {
    const f = form.elements;
    const request = { topic: f.topic.value, strategy: f.strategy.value };
    if (f.value.value !== "") request.value = Number(f.value.value);
    return request;
  };
  const showPlan = (result) => {
    plan.replaceChildren(
      result.executed ? notice(`Offsets of ${result.group_id} reset.`) : notice(`Dry run (group is ${result.state}): nothing committed yet.`),
      table("reset-plan-table", ["Topic", "Partition#", "Current#", "New#"], result.plan.map((p) =>
        el("tr", { "data-partition": p.partition }, cell(p.topic), cell(p.partition, "num"), cell(num(p.current_offset), "num"), cell(num(p.new_offset), "num")))));
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    await act(async () => { showPlan(await api("POST", `/api/groups/${enc(groupId)}/reset-offsets`, body())); }, () => {
      form.elements["reset-execute"].disabled = false;
    });
  });
  form.elements["reset-execute"].addEventListener("click", async () => {
    await act(async () => { showPlan(await api("POST", `/api/groups/${enc(groupId)}/reset-offsets`, { ...body(), execute: true })); },
      () => { refreshGroup(groupId).catch(showError); });
  });
  form.addEventListener("change", () => { form.elements["reset-execute"].disabled = true; });
  const members = g.members.map((m) => el("tr", { "data-member": m.member_id }, cell(m.member_id), cell(m.client_id), cell(m.client_host),
    cell(m.assignment.map(([t, p]) => `${t}-${p}`).join(", ") || "-")));
  return el("section", { id: "group-page", "data-group": groupId },
    el("h2", {}, `Consumer group ${groupId}`),
    el("div", { class: "cards" }, card("State", g.state, "group-state"), card("Members", g.members.length, "group-members"),
      card("Protocol", g.protocol || "-"), card("Generation", g.generation_id),
      card("Total lag", num(g.offsets.reduce((s, o) => s + (o.lag || 0), 0)), "group-lag")),
    el("h3", {}, "Lag over time"), el("div", { id: "lag-chart-box" }, lagChart(g)),
    el("h3", {}, "Offsets"), el("div", { id: "group-offsets-box" }, groupOffsets(g)),
    el("h3", {}, "Members"), table("group-members-table", ["Member", "Client id", "Host", "Assignment"], members),
    el("h3", {}, "Reset offsets"),
    el("p", { class: "muted" }, "Like kcore groups reset-offsets: a dry run first; executing needs the group Empty (its consumers stopped)."),
    form, plan);
}

async function refreshGroup(groupId) {
  const g = await api("GET", `/api/groups/${enc(groupId)}`);
  const chartBox = document.getElementById("lag-chart-box"), offsetsBox = document.getElementById("group-offsets-box");
  if (!chartBox || !offsetsBox) return;
  chartBox.replaceChildren(lagChart(g));
  offsetsBox.replaceChildren(groupOffsets(g));
  document.getElementById("group-state").textContent = g.state;
  document.getElementById("group-members").textContent = g.members.length;
  document.getElementById("group-lag").textContent = num(g.offsets.reduce((s, o) => s + (o.lag || 0), 0));
}

// -- schemas -----------------------------------------------------------------------------
// The latest version and id of the topic's <topic>-key and <topic>-value subjects (TopicNameStrategy).
function topicSchemaCell(schemas) {
  const parts = ["key", "value"].filter((part) => schemas && schemas[part]).map((part) => {
    const s = schemas[part];
    return el("a", { href: `#/schemas/${enc(s.subject)}`, "data-schema": part }, `${part} v${s.version} (id ${s.id})`);
  });
  return parts.length ? parts.flatMap((link, i) => (i ? [" ", link] : [link])) : "-";
}

async function schemasPage() {
  const data = await api("GET", "/api/schemas");
  const rows = data.subjects.map((s) => el("tr", { "data-subject": s.subject },
    el("td", {}, el("a", { href: `#/schemas/${enc(s.subject)}` }, s.subject)), cell(s.latest.type),
    cell(s.versions.join(", ")), cell(s.latest.version, "num"), cell(s.latest.id, "num"), cell(s.compatibility)));
  return el("section", { id: "schemas-page" }, el("h2", {}, "Schemas"),
    el("p", { class: "muted" }, `Compatibility ${data.compatibility} · mode ${data.mode} · changes through the registry's REST API or kcore schemas.`),
    table("subjects", ["Subject", "Type", "Versions", "Latest#", "Id#", "Compatibility"], rows),
    data.subjects.length ? null : el("p", { class: "muted" }, "No subjects registered."),
    data.truncated ? el("p", { class: "muted" }, "Only the first subjects are listed.") : null);
}

async function subjectPage(subject, query) {
  const data = await api("GET", `/api/schemas/${enc(subject)}`);
  const numbers = data.versions.map((v) => v.version);
  const to = Number(query.get("to") || numbers[numbers.length - 1]);
  const from = Number(query.get("from") || numbers[Math.max(numbers.indexOf(to) - 1, 0)]);
  const versions = data.versions.slice().reverse().map((v) => el("details", { "data-version": v.version, open: v.version === to },
    el("summary", {}, `Version ${v.version} · id ${v.id} · ${v.type}`, v.deleted ? el("span", { class: "tag" }, " deleted") : null),
    el("pre", { class: "schema-text" }, v.schema)));
  const picker = (name, value) => el("select", { name, id: `diff-${name}` },
    numbers.map((n) => el("option", { value: n, selected: n === value }, `version ${n}`)));
  const form = el("form", { id: "diff-form", class: "inline" }, el("label", {}, "From", picker("from", from)),
    el("label", {}, "To", picker("to", to)), el("button", { type: "submit" }, "Diff"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    location.hash = `#/schemas/${enc(subject)}?from=${form.elements.from.value}&to=${form.elements.to.value}`;
  });
  let diff = null;
  if (numbers.length > 1) {
    const d = await api("GET", `/api/schemas/${enc(subject)}/diff?from=${from}&to=${to}`);
    diff = el("pre", { id: "schema-diff" }, d.diff.map((line) =>
      el("span", { class: line.startsWith("+") ? "added" : line.startsWith("-") ? "removed" : null }, line + "\n")));
  }
  return el("section", { id: "subject-page", "data-subject": subject },
    el("h2", {}, `Subject ${subject}`),
    el("p", { class: "muted" }, `Compatibility ${data.compatibility} · mode ${data.mode}`),
    numbers.length > 1 ? [el("h3", {}, "Diff between versions"), form, diff] : null,
    el("h3", {}, "Versions"), versions);
}

// -- routing -----------------------------------------------------------------------------
function parseHash() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, search] = raw.split("?");
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(search || "") };
}

async function route() {
  const token = ++renderToken;
  clearInterval(refreshTimer);
  refreshTimer = null;
  clearError();
  const { parts, query } = parseHash();
  for (const link of document.querySelectorAll("header nav a")) link.classList.toggle("active", link.dataset.nav === (parts[0] || "overview"));
  let page, refresh = null;
  try {
    if (!parts.length) { page = await overviewPage(); refresh = async () => { const next = await overviewPage(); if (token === renderToken) view.replaceChildren(next); }; }
    else if (parts[0] === "topics" && parts.length === 1) page = await topicsPage();
    else if (parts[0] === "topics" && parts.length === 2) page = await topicPage(parts[1]);
    else if (parts[0] === "topics" && parts[2] === "messages") page = await messagesPage(parts[1], query);
    else if (parts[0] === "groups" && parts.length === 1) page = await groupsPage();
    else if (parts[0] === "groups") { page = await groupPage(parts[1]); refresh = () => refreshGroup(parts[1]); }
    else if (parts[0] === "schemas" && parts.length === 1) page = await schemasPage();
    else if (parts[0] === "schemas") page = await subjectPage(parts[1], query);
    else throw new Error(`NOT_FOUND: no page ${location.hash}`);
  } catch (error) {
    if (token !== renderToken) return;
    view.replaceChildren(el("p", { class: "muted", id: "page-failed" }, "This page could not be loaded."));
    showError(error);
    return;
  }
  if (token !== renderToken) return;
  view.replaceChildren(page);
  if (refresh) {
    refreshTimer = setInterval(() => { refresh().catch(showError); }, REFRESH_MS);
  }
}

window.addEventListener("hashchange", route);
route();
if (parseHash().parts.length) api("GET", "/api/overview").then(brokerLabel).catch(() => {});
