"""Suite-wide test settings: hypothesis without per-example deadlines, since CI machines
share two cores and a slow example is not a failure of the property under test."""

from hypothesis import settings

settings.register_profile("magi", deadline=None)
settings.load_profile("magi")
