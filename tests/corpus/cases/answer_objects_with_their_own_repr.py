# A script's answer that json.dumps refuses is its repr, as the script's own
# classes write it: monty wrote `Point()` (its export's rendering, without
# the class's __repr__) and an object of the instance's attributes.
class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def __repr__(self):
        return f"Point({self.x}, {self.y})"


rows = {"b": [Point(1, 2)], "a": [Point(3, 4), Point(5, 6)]}
{name: points for name, points in rows.items() if len(points) > 1}
