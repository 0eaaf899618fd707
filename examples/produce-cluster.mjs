// Push jobs for a tenant into a Redis Cluster from Node.js
// (npm install ioredis). sluice's keys carry the tenant in braces,
// sluice:{TENANT}:queue, so each tenant's queue lives on one shard and
// ioredis's Cluster client sends the LPUSH to it, following MOVED and ASK
// while slots move.
// Usage: node produce-cluster.mjs HOST:PORT[,HOST:PORT...] TENANT [COUNT]
import { Cluster } from "ioredis";

const [seeds, tenant, countText = "10"] = process.argv.slice(2);
if (!seeds || !tenant) {
  console.error("usage: node produce-cluster.mjs HOST:PORT[,HOST:PORT...] TENANT [COUNT]");
  process.exit(2);
}
const nodes = seeds.split(",").map((seed) => {
  const at = seed.lastIndexOf(":");
  return { host: seed.slice(0, at), port: Number(seed.slice(at + 1)) };
});
const cluster = new Cluster(nodes);
const jobs = [];
for (let i = 1; i <= Number(countText); i++) {
  jobs.push(JSON.stringify({ id: `event-${i}`, path: "/events", body: { event: i } }));
}
await cluster.lpush(`sluice:{${tenant}}:queue`, ...jobs);
console.log(`pushed ${jobs.length} jobs to ${tenant}`);
await cluster.quit();
