"""Seeds: real ML-engineering tasks to imitate — the seed type and its folder format (:mod:`.seed`), MLE-bench
competition folders (:mod:`.mlebench`), and finding and storing them (:mod:`.load`)."""
