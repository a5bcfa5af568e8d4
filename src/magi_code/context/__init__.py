"""What the model is told and may load: instructions, skills and agent profiles (`loader`
is the one entry every face and subagent uses)."""
