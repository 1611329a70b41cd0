"""Stage 2, inputs: a ``case.Case`` in, its tensors out.

``seeded`` draws them (uniform, normal, explicit values, RoPE tables: seeded and reproducible, rounded once to the
tensor's dtype) and ``npyfile`` reads the ``file:`` ones (.npy files inside the case file's folder). Below the judge
(which remakes a case's inputs) and the case loader (which checks ``file:`` inputs when it reads a case).
"""
