"""Running LangMem's documented examples against LangMem and langmem_ext.

``blocks`` finds the examples of a LangMem checkout, ``standin`` gives both
packages the same offline models, ``runner`` runs a page's blocks as LangMem's
docs test does, ``deviations`` lists the differences we keep on purpose. Used
by ``scripts/compat`` and by the examples test.
"""
