// The way back: Experiments, and the experiment when the page is inside one; or Models, and the
// model when the page is one of its versions.
import { href } from "../router.js";

export function Crumbs({ experimentId }) {
  return (
    <p class="crumbs">
      <a href="#/">Experiments</a> /{" "}
      {experimentId && <><a href={href("experiments", experimentId)}>experiment {experimentId}</a> /</>}
    </p>
  );
}

export function ModelCrumbs({ model }) {
  return (
    <p class="crumbs">
      <a href={href("models")}>Models</a> /{" "}
      {model && <><a href={href("models", model)}>{model}</a> /</>}
    </p>
  );
}

export function DatasetCrumbs({ name }) {
  return (
    <p class="crumbs">
      <a href={href("datasets")}>Datasets</a> /{" "}
      {name && <><a href={href("datasets", name)}>{name}</a> /</>}
    </p>
  );
}
