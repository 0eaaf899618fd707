"""check_layers.py must catch what it exists to catch: an include from a
higher layer, an include of a path that is not under src/, and modules
that include each other. Run: python3 -m unittest tests/test_check_layers.py"""
import os
import subprocess
import sys
import tempfile
import unittest

CHECK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_layers.py")


def run(tree):
    with tempfile.TemporaryDirectory() as src:
        for rel, text in tree.items():
            os.makedirs(os.path.join(src, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(src, rel), "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECK, src], capture_output=True, text=True)
        return p.returncode, p.stdout


class CheckLayers(unittest.TestCase):
    def test_a_clean_tree_passes(self):
        code, out = run({"base/log.h": "", "job/pacing.c": '#include "base/log.h"\n',
                         "main.c": '#include "job/pacing.h"\n', "job/pacing.h": ""})
        self.assertEqual(code, 0, out)

    def test_an_include_from_a_higher_layer_fails(self):
        code, out = run({"base/log.c": '#include "daemon/worker.h"\n', "daemon/worker.h": ""})
        self.assertEqual(code, 1)
        self.assertIn("base/log.c: includes \"daemon/worker.h\" from a higher layer", out)

    def test_a_path_outside_src_fails(self):
        code, out = run({"job/pacing.c": '#include "pacing.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn("not a path under src/", out)

    def test_modules_that_include_each_other_fail(self):
        code, out = run({"daemon/tenant.c": '#include "daemon/worker_t.h"\n', "daemon/tenant.h": "",
                         "daemon/worker_t.h": "", "daemon/worker.c": '#include "daemon/tenant.h"\n'})
        self.assertEqual(code, 1)
        self.assertIn("include circle: daemon/tenant -> daemon/worker -> daemon/tenant", out)


if __name__ == "__main__":
    unittest.main()
