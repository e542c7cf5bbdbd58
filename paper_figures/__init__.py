"""Paper figures: experiments write tidy tables, plotting scripts read only them.

``python -m paper_figures`` (``make figures``) runs every experiment and plot,
writing tables to ``paper_figures/out/tables/`` (CSV + JSON metadata) and
figures to ``paper_figures/out/`` (PNG + PDF), plus an index ``README.md``.
"""
