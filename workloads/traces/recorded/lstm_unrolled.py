# An LSTM unrolled one time step at a time (torch.nn.LSTMCell called T
# times, the last hidden state through a Linear head), for the serial DTR
# replay's speed past 4,096 storages (issue 37; docs/speed-figures.md).
# Input (T, B, 32), hidden 64, 16 outputs; T is $LSTM_STEPS (default
# 200: 11,452 ops and 6,835 storages in simrd's reading; 50 gives 1,735
# storages, below the closures' old cap). Not shipped as a log (200
# steps are 3.5 MB); record it with
#   LSTM_STEPS=200 /usr/bin/python3 cli/gpumemsim_record.py \
#     --model workloads/traces/recorded/lstm_unrolled.py:make_model \
#     --input 200,8,32 --batch-dim 1 --loss mse -o lstm200.log
#   /usr/bin/python3 workloads/traces/recorded/add_times.py lstm200.log \
#     lstm200-t.log
import os

import torch
from torch import nn

T = int(os.environ.get("LSTM_STEPS", "200"))
I, H, O = 32, 64, 16


class Unrolled(nn.Module):
    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(I, H)
        self.head = nn.Linear(H, O)

    def forward(self, x):
        h = torch.zeros(x.size(1), H, device=x.device)
        c = torch.zeros(x.size(1), H, device=x.device)
        for t in range(x.size(0)):
            h, c = self.cell(x[t], (h, c))
        return self.head(h)


def make_model():
    return Unrolled()
