#include "core/mlflow_json.h"

namespace cairn::core {

namespace {

template <typename KeyValue>
void WriteKeyValues(JsonWriter& w, const std::vector<KeyValue>& items) {
  w.BeginArray();
  for (const KeyValue& t : items) {
    w.BeginObject().Key("key").String(t.key).Key("value").String(t.value).EndObject();
  }
  w.EndArray();
}

}  // namespace

void WriteTags(JsonWriter& w, const std::vector<core::Tag>& tags) { WriteKeyValues(w, tags); }

void WriteParams(JsonWriter& w, const std::vector<core::Param>& params) {
  WriteKeyValues(w, params);
}

void WriteExperiment(JsonWriter& w, const core::Experiment& e) {
  w.BeginObject();
  w.Key("experiment_id").String(e.experiment_id);
  w.Key("name").String(e.name);
  w.Key("artifact_location").String(e.artifact_location);
  w.Key("lifecycle_stage").String(core::LifecycleStageName(e.lifecycle_stage));
  w.Key("last_update_time").Int(e.last_update_time);
  w.Key("creation_time").Int(e.creation_time);
  if (!e.tags.empty()) {
    w.Key("tags");
    WriteTags(w, e.tags);
  }
  w.EndObject();
}

void WriteRunInfo(JsonWriter& w, const core::RunInfo& info) {
  w.BeginObject();
  w.Key("run_uuid").String(info.run_id);
  w.Key("run_id").String(info.run_id);
  w.Key("run_name").String(info.run_name);
  w.Key("experiment_id").String(info.experiment_id);
  w.Key("user_id").String(info.user_id);
  w.Key("status").String(core::RunStatusName(info.status));
  w.Key("start_time").Int(info.start_time);
  if (info.end_time) w.Key("end_time").Int(*info.end_time);
  w.Key("artifact_uri").String(info.artifact_uri);
  w.Key("lifecycle_stage").String(core::LifecycleStageName(info.lifecycle_stage));
  w.EndObject();
}

void WriteMetric(JsonWriter& w, const core::Metric& m, std::string_view run_id) {
  w.BeginObject();
  w.Key("key").String(m.key);
  w.Key("value").Double(m.value);
  w.Key("timestamp").Int(m.timestamp);
  w.Key("step").Int(m.step);
  if (!run_id.empty()) w.Key("run_id").String(run_id);
  w.EndObject();
}

void WriteRun(JsonWriter& w, const core::Run& run) {
  w.BeginObject();
  w.Key("info");
  WriteRunInfo(w, run.info);
  w.Key("data").BeginObject();
  if (!run.data.metrics.empty()) {
    w.Key("metrics").BeginArray();
    for (const core::Metric& m : run.data.metrics) WriteMetric(w, m);
    w.EndArray();
  }
  if (!run.data.params.empty()) {
    w.Key("params");
    WriteKeyValues(w, run.data.params);
  }
  if (!run.data.tags.empty()) {
    w.Key("tags");
    WriteKeyValues(w, run.data.tags);
  }
  w.EndObject();
  w.Key("inputs").BeginObject();
  if (!run.inputs.empty()) {
    w.Key("dataset_inputs").BeginArray();
    for (const core::DatasetInput& in : run.inputs) {
      w.BeginObject();
      if (!in.tags.empty()) {
        w.Key("tags");
        WriteTags(w, in.tags);
      }
      const core::Dataset& d = in.dataset;
      w.Key("dataset").BeginObject();
      w.Key("name").String(d.name).Key("digest").String(d.digest);
      w.Key("source_type").String(d.source_type).Key("source").String(d.source);
      if (!d.schema.empty()) w.Key("schema").String(d.schema);
      if (!d.profile.empty()) w.Key("profile").String(d.profile);
      w.EndObject();
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
  w.EndObject();
}

void WriteConsoleChunk(JsonWriter& w, const core::ConsoleChunk& c) {
  w.BeginObject();
  w.Key("offset").Int(c.offset);
  w.Key("stream").String(core::ConsoleStreamName(c.stream));
  w.Key("timestamp").Int(c.timestamp);
  w.Key("data").String(c.data);
  w.EndObject();
}

// MLflow's SQL registry leaves user_id unset, so it never appears there; cairn records the
// creator and shows it when known. Fields MLflow always sets appear even when empty.
void WriteModelVersion(JsonWriter& w, const core::ModelVersion& v) {
  w.BeginObject();
  w.Key("name").String(v.name);
  w.Key("version").String(std::to_string(v.version));
  w.Key("creation_timestamp").Int(v.creation_timestamp);
  w.Key("last_updated_timestamp").Int(v.last_updated_timestamp);
  if (!v.user_id.empty()) w.Key("user_id").String(v.user_id);
  w.Key("current_stage").String(core::ModelStageName(v.current_stage));
  w.Key("description").String(v.description);
  w.Key("source").String(v.source);
  w.Key("run_id").String(v.run_id);
  w.Key("status").String(core::ModelVersionStatusName(v.status));
  if (!v.status_message.empty()) w.Key("status_message").String(v.status_message);
  if (!v.tags.empty()) {
    w.Key("tags");
    WriteTags(w, v.tags);
  }
  w.Key("run_link").String(v.run_link);
  if (!v.aliases.empty()) {
    w.Key("aliases").BeginArray();
    for (const std::string& a : v.aliases) w.String(a);
    w.EndArray();
  }
  w.EndObject();
}

void WriteRegisteredModel(JsonWriter& w, const core::RegisteredModel& m) {
  w.BeginObject();
  w.Key("name").String(m.name);
  w.Key("creation_timestamp").Int(m.creation_timestamp);
  if (m.last_updated_timestamp != 0) w.Key("last_updated_timestamp").Int(m.last_updated_timestamp);
  if (!m.user_id.empty()) w.Key("user_id").String(m.user_id);
  if (!m.description.empty()) w.Key("description").String(m.description);
  if (!m.latest_versions.empty()) {
    w.Key("latest_versions").BeginArray();
    for (const core::ModelVersion& v : m.latest_versions) WriteModelVersion(w, v);
    w.EndArray();
  }
  if (!m.tags.empty()) {
    w.Key("tags");
    WriteTags(w, m.tags);
  }
  if (!m.aliases.empty()) {
    w.Key("aliases").BeginArray();
    for (const core::ModelAlias& a : m.aliases) {
      w.BeginObject().Key("alias").String(a.alias).Key("version").String(std::to_string(a.version));
      w.EndObject();
    }
    w.EndArray();
  }
  w.EndObject();
}

void WriteTask(JsonWriter& w, const core::Task& t) {
  w.BeginObject();
  w.Key("id").String(t.id).Key("queue").String(t.queue).Key("priority").Int(t.priority);
  w.Key("state").String(core::TaskStateName(t.state));
  w.Key("needs").BeginObject().Key("gpus").Int(t.needs.gpus).Key("cpus").Double(t.needs.cpus);
  w.Key("memory_mib").Int(t.needs.memory_mib).EndObject();
  w.Key("spec").Raw(t.spec.empty() ? "{}" : t.spec);
  w.Key("requirements").Raw(t.requirements.empty() ? "{}" : t.requirements);
  w.Key("owner").String(t.owner).Key("team").String(t.team).Key("run_id").String(t.run_id);
  w.Key("attempt").Int(t.attempt).Key("max_attempts").Int(t.max_attempts);
  w.Key("agent").String(t.agent).Key("lease_expiry").Int(t.lease_expiry);
  w.Key("gpus").String(t.gpus).Key("cancel_requested").Bool(t.cancel_requested);
  w.Key("reason").String(t.reason).Key("created_time").Int(t.created_time);
  w.Key("start_time").Int(t.start_time).Key("end_time").Int(t.end_time);
  w.EndObject();
}

void WriteAgent(JsonWriter& w, const core::Agent& a) {
  w.BeginObject().Key("id").String(a.id).Key("name").String(a.name).Key("owner").String(a.owner);
  w.Key("queues").BeginArray();
  for (const std::string& q : a.queues) w.String(q);
  w.EndArray().Key("host").Raw(a.host.empty() ? "{}" : a.host).Key("gpus").BeginArray();
  for (const std::string& g : a.gpus) w.String(g);
  w.EndArray().Key("slots").Int(a.slots).Key("started_time").Int(a.started_time);
  w.Key("heartbeat_time").Int(a.heartbeat_time).EndObject();
}

}  // namespace cairn::core
