"""`tf.distribute.experimental`: the older spellings."""

from layerflow._src.distribute.central_storage import CentralStorageStrategy
from layerflow._src.distribute.collective_util import (
    CollectiveCommunication,
    CollectiveHints,
    CommunicationImplementation,
    CommunicationOptions,
)
from layerflow._src.distribute.input_lib import ValueContext
from layerflow._src.distribute.multi_worker import MultiWorkerMirroredStrategy
from layerflow._src.distribute.preemption import (
    PreemptionCheckpointHandler,
    PreemptionWatcher,
    TerminationConfig,
)
from layerflow.distribute.experimental import partitioners
