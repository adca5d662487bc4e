"""Evaluation passes without a loader (thirty-fourth landing, heldout29's ALBEF retrieval evaluation):

- `for i in range(0, num_text, text_bs): text = texts[i: min(num_text, i + text_bs)]` running a model on each
  chunk is a pass over batches: its per-chunk copies are per-step costs;
- `for i, sims in enumerate(metric_logger.log_every(sims_matrix[start:end], 50)):` running a model on each row of
  a tensor (the re-ranking of each image's top-k texts) is one model pass per row.

A loop that slices the same way but runs no model (tokenizing chunks into a cache) stays a set-up loop.
"""

from __future__ import annotations

from projects import lint_files

UTILS = """\
    class MetricLogger:
        def __init__(self, delimiter="  "):
            self.delimiter = delimiter

        def log_every(self, iterable, print_freq, header=None):
            i = 0
            for obj in iterable:
                yield obj
                if i % print_freq == 0:
                    print(header, i)
                i += 1
"""

EVAL = """\
    import torch
    import utils


    @torch.no_grad()
    def evaluation(model, texts, images, tokenizer, device, k_test):
        metric_logger = utils.MetricLogger(delimiter="  ")
        num_text = len(texts)
        text_bs = 256
        text_feats = []
        for i in range(0, num_text, text_bs):
            text = texts[i: min(num_text, i + text_bs)]
            text_input = tokenizer(text, padding="max_length", max_length=30, return_tensors="pt").to(device)
            text_output = model.text_encoder(text_input.input_ids, attention_mask=text_input.attention_mask)
            text_feats.append(text_output.last_hidden_state)
        text_feats = torch.cat(text_feats, dim=0)
        image_feats = model.visual_encoder(images.to(device))
        sims_matrix = image_feats[:, 0, :] @ text_feats[:, 0, :].t()
        for i, sims in enumerate(metric_logger.log_every(sims_matrix, 50, "Evaluation:")):
            topk_sim, topk_idx = sims.topk(k=k_test, dim=0)
            encoder_att = torch.ones((k_test, 577), dtype=torch.long).to(device)
            output = model.text_encoder(encoder_embeds=text_feats[topk_idx], encoder_attention_mask=encoder_att)
        return sims_matrix
"""


def _eval(tmp_path, text=EVAL):
    return lint_files(tmp_path, {"utils.py": UTILS, "evaluation.py": text}, "GPU203")


def test_a_pass_over_chunks_the_loop_slices_that_runs_a_model_is_per_batch(tmp_path):
    assert ("evaluation.py", 13, "GPU203") in _eval(tmp_path)


def test_a_loop_over_the_rows_of_a_tensor_that_runs_a_model_is_per_row(tmp_path):
    assert ("evaluation.py", 21, "GPU203") in _eval(tmp_path)


def test_chunks_and_rows_without_a_model_stay_set_up_loops(tmp_path):
    text = EVAL.replace("            text_output = model.text_encoder(text_input.input_ids, "
                        "attention_mask=text_input.attention_mask)\n"
                        "            text_feats.append(text_output.last_hidden_state)\n",
                        "            text_feats.append(text_input.input_ids)\n")
    text = text.replace("            output = model.text_encoder(encoder_embeds=text_feats[topk_idx], "
                        "encoder_attention_mask=encoder_att)\n", "            print(encoder_att.sum())\n")
    assert "model.text_encoder(" not in text
    found = _eval(tmp_path, text)
    assert ("evaluation.py", 13, "GPU203") not in found and ("evaluation.py", 21, "GPU203") not in found
