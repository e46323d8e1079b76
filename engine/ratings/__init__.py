"""Ratings of explanations: by people, by a judge model, and how far they agree."""
