"""SM90 kernel components: TMA loads (``tma``), the wgmma atom and its shared-memory
descriptors (``wgmma``), the mbarrier pipeline and the ordered sequence barrier
(``pipeline``); each emits into a :class:`~backends.cuda.builder.KernelBuilder`."""
