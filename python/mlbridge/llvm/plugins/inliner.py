"""The inline advisor plugin's protocol: LLVM's own ML-inliner features
(:data:`mlbridge.llvm.advisors.INLINE_FEATURES`, the list of LLVM's
``InlineModelFeatureMaps.h`` that the plugin includes), the optional inputs
it sends when asked (``inlining_default``, the caller's and callee's IR2Vec
vectors at the published length) and LLVM's advice. The plugin writes the
same object with ``-mlbridge-inline-describe`` (a test compares them)."""

from ..advisors import INLINE_FEATURES
from ._protocol import Protocol, Spec

#: The published IR2Vec vocabulary's length, which the plugin offers a
#: model when no vocabulary of another length is configured.
EMBEDDING_LENGTH = 300

PROTOCOL = Protocol(
    features=[Spec(name, "int64_t", (1,)) for name in INLINE_FEATURES],
    optional_features=[Spec("inlining_default", "int64_t", (1,))]
    + [Spec(name, "float", (1, EMBEDDING_LENGTH))
       for name in ("caller_embedding", "callee_embedding")],
    advice=Spec("inlining_decision", "int64_t", (1,)),
)
