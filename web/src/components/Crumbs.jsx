// The way back: Experiments, and the experiment when the page is inside one.
import { href } from "../router.js";

export function Crumbs({ experimentId }) {
  return (
    <p class="crumbs">
      <a href="#/">Experiments</a> /{" "}
      {experimentId && <><a href={href("experiments", experimentId)}>experiment {experimentId}</a> /</>}
    </p>
  );
}
