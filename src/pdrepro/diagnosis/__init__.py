"""Why a run falls short (`pdrepro diagnose`): its evidence gathered once (evidence.py), the gaps measured
(gaps.py), one module per cause behind one interface (causes/), and the ranker (rank.py)."""
