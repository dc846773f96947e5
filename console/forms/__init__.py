"""The pages' forms, one module a page: what a form posts, read and checked.

The inputs the API shares with the pages (a card's answer, the proposal filters) are defined
once in `beliefs.schemas`; these modules add what only a page knows (how a value is typed into
a text box, which fields a page shows).
"""
