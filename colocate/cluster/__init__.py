"""Where cluster objects come from and where they are kept: shared by every component.

The I/O half of the core (the pure half is `policies`): the API client loader, the reflector
(paged list, watch with bookmarks, relist on 410), the directory loader, and the one cluster store
that every component's view (the webhook's snapshot, the scheduler's node table) is an index of.
"""
