"""The example project's spiders: ``demo`` (the offline demo site) and ``real_sites``."""
