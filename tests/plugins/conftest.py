from tests.support.distributions import site

__all__ = ["site"]
