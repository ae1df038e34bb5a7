"""Studies: where each effect appears, one claim of a page along one knob at several training seeds.

spec.py     what a study is (page, claim, knob, grid, seeds) and the checks of a study a user asks for
shipped.py  the studies each source page ships (its paper's headline along the knob the paper's scale differs in)
compute.py  the cells on the lab's engine (stored results, so a study resumes) and the claim read along the knob
stats.py    per value pooled over seeds; "appears from" and "absent up to" with Holm over the grid; the trend
words.py    the one sentence the map says, from the numbers
"""
