// Push jobs for a tenant from Node.js (npm install redis).
// Usage: node produce.mjs TENANT [COUNT]
// Each job is an envelope (SPEC section 3); "path" is appended to the
// tenant's endpoint, "method" defaults to POST.
import { createClient } from "redis";

const [tenant, countText = "10"] = process.argv.slice(2);
if (!tenant) {
  console.error("usage: node produce.mjs TENANT [COUNT]");
  process.exit(2);
}
const client = createClient({ url: "redis://127.0.0.1:6379" });
await client.connect();
const jobs = [];
for (let i = 1; i <= Number(countText); i++) {
  jobs.push(JSON.stringify({ id: `event-${i}`, path: "/events", body: { event: i } }));
}
await client.lPush(`sluice:{${tenant}}:queue`, jobs);
console.log(`pushed ${jobs.length} jobs to ${tenant}`);
await client.quit();
