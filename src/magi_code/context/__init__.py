"""What the model is told: instructions and agent profiles."""
