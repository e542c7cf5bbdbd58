"""Shipped scenarios (``*.yaml``) and fitted application profiles (``profiles/``).

Read through :func:`goodopt.load_scenario` (by name) and
:func:`goodopt.shipped_profile`; regenerate the profiles with ``goodopt fit``.
"""
