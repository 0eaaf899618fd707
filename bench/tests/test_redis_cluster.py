"""The cluster's key slot and the bench's tenant placement (pure)."""

import unittest

from bench import redis_cluster as RC
from bench.scenarios.cluster import per_shard


class KeySlot(unittest.TestCase):
    def test_crc16_of_the_cluster_spec(self):
        self.assertEqual(RC.crc16(b"123456789"), 0x31C3)
        self.assertEqual(RC.key_slot("123456789"), 12739)

    def test_hash_tags(self):
        self.assertEqual(RC.key_slot("{user1000}.following"), RC.key_slot("{user1000}.followers"))
        self.assertEqual(RC.key_slot("{user1000}.following"), RC.key_slot("user1000"))
        self.assertEqual(RC.key_slot("foo{}{bar}"), RC.crc16(b"foo{}{bar}") % RC.SLOTS,
                         "an empty tag hashes the whole key")
        self.assertEqual(RC.key_slot("foo{{bar}}zap"), RC.key_slot("{bar"))
        self.assertEqual(RC.key_slot("foo{bar}{zap}"), RC.key_slot("bar"))
        self.assertEqual(RC.key_slot("{tail"), RC.crc16(b"{tail") % RC.SLOTS,
                         "an open brace without a close hashes the whole key")
        self.assertEqual(RC.tenant_slot("acme"), RC.key_slot("sluice:{acme}:queue"))


RANGES = [(0, 5460, 1), (5461, 10922, 0), (10923, 16383, 2)]


class Placement(unittest.TestCase):
    def test_shard_of(self):
        self.assertEqual(RC.shard_of(0, RANGES), 1)
        self.assertEqual(RC.shard_of(5461, RANGES), 0)
        self.assertEqual(RC.shard_of(16383, RANGES), 2)
        self.assertIsNone(RC.shard_of(16384, RANGES))

    def test_a_moved_slot_splits_its_range(self):
        moved = RC.ranges_after_move(RANGES, 100, 2)
        self.assertEqual(moved, [(0, 99, 1), (100, 100, 2), (101, 5460, 1), (5461, 10922, 0),
                                 (10923, 16383, 2)])
        self.assertEqual(RC.shard_of(100, moved), 2)
        self.assertEqual(RC.ranges_after_move(RANGES, 0, 0)[0], (0, 0, 0), "a range's edge")
        self.assertEqual(RC.ranges_after_move([(7, 7, 0)], 7, 1), [(7, 7, 1)])

    def test_tenants_land_on_every_shard(self):
        found = RC.tenants_per_shard(RANGES, 3, 2)
        for shard, names in found.items():
            self.assertEqual(len(names), 2)
            for n in names:
                self.assertEqual(RC.shard_of(RC.tenant_slot(n), RANGES), shard)

    def test_per_shard_charges_each_shard_its_own_jobs(self):
        found = RC.tenants_per_shard(RANGES, 3, 1)
        tenants = [found[0][0], found[1][0], found[2][0]]
        res = {"redis_cpu_s_per_node": [1.0, 2.0, 4.0], "commands_per_node": [10, 20, 40]}
        rows = per_shard(res, tenants, 1000, RANGES)
        self.assertEqual([r["jobs"] for r in rows], [1000, 1000, 1000])
        self.assertEqual([r["cpu_per_1k"] for r in rows], [1.0, 2.0, 4.0])
        self.assertEqual([r["commands_per_job"] for r in rows], [0.01, 0.02, 0.04])


if __name__ == "__main__":
    unittest.main()
