/**
 * SPEC §21 configuration: each problem of `notifications` names its key path (fixtures named after
 * the failure): a threshold outside (0, 1] or listed twice, a URL that is not http(s), a queue of
 * no deliveries, and (as `gateway check` reads the files a configuration names) a secret file that
 * cannot be read.
 */
import { expect, it } from "vitest";
import { problemsOf } from "../helpers/config-problems.js";

it("webhook_threshold_out_of_range", () => {
  expect(problemsOf("webhook_threshold_out_of_range.yaml")).toEqual([
    "notifications.webhooks[0].thresholds[1]: expected a fraction in (0, 1], e.g. 0.8, received 1.5 @11:25",
    "notifications.webhooks[0].thresholds: expected each threshold once @11:19",
    'notifications.webhooks[1].url: expected an http:// or https:// URL, received "ftp://billing.internal/hooks" @12:12',
    "notifications.queue_size: expected a positive integer, received 0 @14:15",
  ]);
});

it("webhook_secret_file_missing", () => {
  const [problem, ...rest] = problemsOf("webhook_secret_file_missing.yaml");
  expect(rest).toEqual([]);
  expect(problem).toMatch(
    /^notifications\.webhooks\[0\]\.secret_file: cannot read "webhook-secret-missing" \(.*webhook-secret-missing\): ENOENT/,
  );
});
