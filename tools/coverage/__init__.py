"""Coverage rows of paddle.nn and paddle.vision.models and the Paddle side of building them (needs Paddle)."""
