"""The causes of a shortfall, one module each behind one interface (base.Cause); registry.py lists them."""
