"""Transliterations of the source functions behind rfbench's named conventions, kept to check against.

Each function follows its source statement by statement, in NumPy (torch operations replaced by their NumPy
equivalents, dtypes kept: ``.float()`` is ``astype(np.float32)``). They are reference material for
``tests/test_conventions.py`` only; rfbench does not import them. Sources, as read (repository, file, commit):

- GraphPose-Fi: Cirrick/GraphPose-Fi, ``utils.py`` (``compute_pck_pckh``, ``compute_similarity_transform``,
  ``calulate_error``) and ``train.py`` (the validation loop), commit 6c8fd66fb35b9ed2ea1b6d5424f58893192cbaaf.
- MM-Fi toolbox: ybhbingo/MMFi_dataset, ``mmfi_lib/evaluate.py`` (``compute_similarity_transform``,
  ``calulate_error``), commit 41e404b636ce87736a6d8ce93f5d94d6c2be7f81.
- WiFlow: DY2434/WiFlow-WiFi-Pose-Estimation-with-Spatio-Temporal-Decoupling, ``utils/metrics.py``
  (``calculate_pck``, ``calculate_mpjpe``) and ``train.py`` (the test loop), commit
  df8f030348ebcb002d375bdc1a400d00582affdd.
- mmpose: open-mmlab/mmpose, ``mmpose/evaluation/functional/keypoint_eval.py`` (``_calc_distances``,
  ``_distance_acc``, ``keypoint_pck_accuracy``, ``keypoint_auc``, ``keypoint_mpjpe``), commit
  db4ebd6e0cf1b113e20a7cbf94cdaba4ca2fcb85; ``mmpose/evaluation/functional/mesh_eval.py``
  (``compute_similarity_transform``) as stored in the fork wux024/mmpose, commit
  adfed18fa25e653c0f48922bdfcc34b77ec8bea8.
"""

from __future__ import annotations

import numpy as np

# ==========================================================================================================
# GraphPose-Fi (Cirrick/GraphPose-Fi @ 6c8fd66fb35b9ed2ea1b6d5424f58893192cbaaf)
# ==========================================================================================================


def gpf_compute_pck_pckh(dt_kpts, gt_kpts, thr, align=False, dataset="mmfi-csi"):
    """utils.py compute_pck_pckh: shapes [n, coords, keypoints]; returns per-keypoint PCK and the overall one
    (index 17 for mmfi-csi), in percent."""
    dt = np.array(dt_kpts)
    gt = np.array(gt_kpts)
    if align is True:
        dt = dt.transpose(0, 2, 1)
        gt = gt.transpose(0, 2, 1)
        preds_hip = dt[:, 0, :]
        gts_hip = gt[:, 0, :]
        offset = gts_hip - preds_hip
        dt = dt + offset[:, None, :]
        dt = dt.transpose(0, 2, 1)
        gt = gt.transpose(0, 2, 1)
    assert dt.shape[0] == gt.shape[0]
    kpts_num = gt.shape[2]
    if dataset == "mmfi-csi":
        scale = np.sqrt(np.sum(np.square(gt[:, :, 5] - gt[:, :, 12]), 1))  # "right shoulder--left hip"
    elif dataset == "person-in-wifi-3d":
        scale = np.sqrt(np.sum(np.square(gt[:, :, 6] - gt[:, :, 4]), 1))
    elif dataset == "wipose":
        scale = np.sqrt(np.sum(np.square(gt[:, :, 5] - gt[:, :, 8]), 1))
    dist = np.sqrt(np.sum(np.square(dt - gt), 1)) / np.tile(scale, (gt.shape[2], 1)).T
    pck = np.zeros(gt.shape[2] + 1)
    for kpt_idx in range(kpts_num):
        pck[kpt_idx] = 100 * np.mean(dist[:, kpt_idx] <= thr)
    if dataset == "mmfi-csi":
        pck[17] = 100 * np.mean(dist <= thr)
    elif dataset == "person-in-wifi-3d":
        pck[14] = 100 * np.mean(dist <= thr)
    elif dataset == "wipose":
        pck[18] = 100 * np.mean(dist <= thr)
    return pck


def gpf_compute_similarity_transform(X, Y, compute_optimal_scale=False):
    """utils.py compute_similarity_transform (a port of MATLAB's procrustes): X targets, Y inputs."""
    muX = X.mean(0)
    muY = Y.mean(0)
    X0 = X - muX
    Y0 = Y - muY
    ssX = (X0 ** 2.).sum()
    ssY = (Y0 ** 2.).sum()
    normX = np.sqrt(ssX)
    normY = np.sqrt(ssY)
    X0 = X0 / normX
    Y0 = Y0 / normY
    A = np.dot(X0.T, Y0)
    U, s, Vt = np.linalg.svd(A, full_matrices=False)
    V = Vt.T
    T = np.dot(V, U.T)
    detT = np.linalg.det(T)
    V[:, -1] *= np.sign(detT)
    s[-1] *= np.sign(detT)
    T = np.dot(V, U.T)
    traceTA = s.sum()
    if compute_optimal_scale:
        b = traceTA * normX / normY
        d = 1 - traceTA ** 2
        Z = normX * traceTA * np.dot(Y0, T) + muX
    else:
        b = 1
        d = 1 + ssY / ssX - 2 * traceTA * normY / normX
        Z = normY * np.dot(Y0, T) + muX
    c = muX - b * np.dot(muY, T)
    return d, Z, T, b, c


def gpf_calulate_error(preds, gts, align=False):
    """utils.py calulate_error: per-frame MPJPE and PA-MPJPE, and their per-joint means."""
    N = preds.shape[0]
    num_joints = preds.shape[1]
    if align is True:
        preds_hip = preds[:, 0, :]
        gts_hip = gts[:, 0, :]
        offset = gts_hip - preds_hip
        preds = preds + offset[:, None, :]
    mpjpe_joints = np.sqrt(np.sum(np.square(preds - gts), axis=2))
    mpjpe = mpjpe_joints.mean(axis=1)
    pampjpe_joints = np.zeros([N, num_joints])
    for n in range(N):
        frame_pred = preds[n]
        frame_gt = gts[n]
        _, Z, T, b, c = gpf_compute_similarity_transform(frame_gt, frame_pred, compute_optimal_scale=True)
        frame_pred = (b * frame_pred.dot(T)) + c
        pampjpe_joints[n] = np.sqrt(np.sum(np.square(frame_pred - frame_gt), axis=1))
    pampjpe = pampjpe_joints.mean(axis=1)
    mpjpe_per_joint = mpjpe_joints.mean(axis=0)
    pampjpe_per_joint = pampjpe_joints.mean(axis=0)
    return mpjpe, pampjpe, mpjpe_per_joint, pampjpe_per_joint


def gpf_validation(pred, gt, batch_size, thresholds=(0.5, 0.4, 0.3, 0.2, 0.1), dataset="mmfi-csi"):
    """train.py's validation loop over a loader of ``batch_size`` consecutive rows (shuffle=False,
    drop_last=False): per batch compute_pck_pckh on (batch, coords, joints) and calulate_error; PCK overall =
    np.mean over batches of element 17; MPJPE and PA-MPJPE = the mean of the per-frame lists. Returns
    ``({thr: pck_percent}, mpjpe, pampjpe)``."""
    pck_iter = [[] for _ in thresholds]
    mpjpe_list, pampjpe_list = [], []
    for start in range(0, pred.shape[0], batch_size):
        p, g = pred[start:start + batch_size], gt[start:start + batch_size]
        for idx, percentage in enumerate(thresholds):
            pck_iter[idx].append(gpf_compute_pck_pckh(p.transpose(0, 2, 1), g.transpose(0, 2, 1), percentage,
                                                      align=False, dataset=dataset))
        mpjpe, pampjpe, _, _ = gpf_calulate_error(p, g, align=False)
        mpjpe_list += mpjpe.tolist()
        pampjpe_list += pampjpe.tolist()
    pck_overall = [np.mean(pck_value, 0)[17] for pck_value in pck_iter]
    return (dict(zip(thresholds, pck_overall)), sum(mpjpe_list) / len(mpjpe_list),
            sum(pampjpe_list) / len(pampjpe_list))


# ==========================================================================================================
# MM-Fi toolbox (ybhbingo/MMFi_dataset @ 41e404b636ce87736a6d8ce93f5d94d6c2be7f81)
# ==========================================================================================================


def mmfi_compute_similarity_transform(X, Y, compute_optimal_scale=False):
    """mmfi_lib/evaluate.py compute_similarity_transform (the same MATLAB procrustes port)."""
    return gpf_compute_similarity_transform(X, Y, compute_optimal_scale)


def mmfi_calulate_error(preds, gts):
    """mmfi_lib/evaluate.py calulate_error: MPJPE and PA-MPJPE over every joint of every frame."""
    N = preds.shape[0]
    num_joints = preds.shape[1]
    mpjpe = np.mean(np.sqrt(np.sum(np.square(preds - gts), axis=2)))
    pampjpe = np.zeros([N, num_joints])
    for n in range(N):
        frame_pred = preds[n]
        frame_gt = gts[n]
        _, Z, T, b, c = mmfi_compute_similarity_transform(frame_gt, frame_pred, compute_optimal_scale=True)
        frame_pred = (b * frame_pred.dot(T)) + c
        pampjpe[n] = np.sqrt(np.sum(np.square(frame_pred - frame_gt), axis=1))
    pampjpe = np.mean(pampjpe)
    return mpjpe, pampjpe


# ==========================================================================================================
# WiFlow (DY2434/WiFlow-WiFi-Pose-Estimation-with-Spatio-Temporal-Decoupling @ df8f0303...)
# ==========================================================================================================


def wiflow_calculate_pck(pred, target, thresholds=(0.2,), use_torso_norm=True):
    """utils/metrics.py calculate_pck, with torch replaced by NumPy: ``.float().mean()`` is a float32 mean."""
    batch_size = pred.shape[0]
    if len(pred.shape) == 2 and pred.shape[1] == 30:
        pred = pred.reshape(batch_size, 15, 2)
        target = target.reshape(batch_size, 15, 2)
    if use_torso_norm:
        NECK_IDX, PELVIS_IDX = 2, 12
        normalize_distances = np.sqrt(np.sum((target[:, NECK_IDX] - target[:, PELVIS_IDX]) ** 2, axis=1))
    else:
        L_SHOULDER_IDX, R_SHOULDER_IDX = 2, 5
        normalize_distances = np.sqrt(np.sum((target[:, L_SHOULDER_IDX] - target[:, R_SHOULDER_IDX]) ** 2, axis=1))
    normalize_distances = np.maximum(normalize_distances, 0.01)  # torch.clamp(min=0.01)
    distances = np.sqrt(np.sum((pred - target) ** 2, axis=2))
    normalized_distances = distances / normalize_distances[:, None]
    pck_results = {}
    for threshold in thresholds:
        correct_keypoints = (normalized_distances <= threshold).astype(np.float32)
        pck_overall = correct_keypoints.mean()
        pck_results[threshold] = float(pck_overall)
    return pck_results


def wiflow_calculate_mpjpe(pred, target):
    """utils/metrics.py calculate_mpjpe."""
    batch_size = pred.shape[0]
    if len(pred.shape) == 2 and pred.shape[1] == 30:
        pred = pred.reshape(batch_size, 15, 2)
        target = target.reshape(batch_size, 15, 2)
    distances = np.sqrt(np.sum((pred - target) ** 2, axis=2))
    return float(np.mean(distances))


def wiflow_test(pred, gt, batch_size, thresholds=(0.1, 0.2, 0.3, 0.4, 0.5)):
    """train.py's test loop over a loader of ``batch_size`` rows (shuffle=False, drop_last=True): per batch
    calculate_pck and calculate_mpjpe, summed weighted by the batch size, over the rows seen. Returns
    ``({thr: pck}, mpjpe)``."""
    totals = {t: 0.0 for t in thresholds}
    total_mpe = 0.0
    samples = 0
    for start in range(0, pred.shape[0] - batch_size + 1, batch_size):  # drop_last=True
        p, g = pred[start:start + batch_size], gt[start:start + batch_size]
        mpe = wiflow_calculate_mpjpe(p, g)
        res = wiflow_calculate_pck(p, g, thresholds=list(thresholds))
        n = g.shape[0]
        total_mpe += mpe * n
        for t in thresholds:
            totals[t] += res[t] * n
        samples += n
    return {t: totals[t] / samples for t in thresholds}, total_mpe / samples


# ==========================================================================================================
# mmpose (open-mmlab/mmpose @ db4ebd6e0cf1b113e20a7cbf94cdaba4ca2fcb85; mesh_eval.py from wux024/mmpose @
# adfed18fa25e653c0f48922bdfcc34b77ec8bea8)
# ==========================================================================================================


def mmpose_calc_distances(preds, gts, mask, norm_factor):
    """keypoint_eval.py _calc_distances: (K, N) float32 normalised distances, -1 where masked."""
    N, K, _ = preds.shape
    _mask = mask.copy()
    _mask[np.where((norm_factor == 0).sum(1))[0], :] = False
    distances = np.full((N, K), -1, dtype=np.float32)
    norm_factor[np.where(norm_factor <= 0)] = 1e6
    distances[_mask] = np.linalg.norm(((preds - gts) / norm_factor[:, None, :])[_mask], axis=-1)
    return distances.T


def mmpose_distance_acc(distances, thr=0.5):
    """keypoint_eval.py _distance_acc."""
    distance_valid = distances != -1
    num_distance_valid = distance_valid.sum()
    if num_distance_valid > 0:
        return (distances[distance_valid] < thr).sum() / num_distance_valid
    return -1


def mmpose_keypoint_pck_accuracy(pred, gt, mask, thr, norm_factor):
    """keypoint_eval.py keypoint_pck_accuracy: (acc per joint, average over joints with any, count)."""
    distances = mmpose_calc_distances(pred, gt, mask, norm_factor)
    acc = np.array([mmpose_distance_acc(d, thr) for d in distances])
    valid_acc = acc[acc >= 0]
    cnt = len(valid_acc)
    avg_acc = valid_acc.mean() if cnt > 0 else 0.0
    return acc, avg_acc, cnt


def mmpose_keypoint_auc(pred, gt, mask, norm_factor, num_thrs=20):
    """keypoint_eval.py keypoint_auc."""
    nor = np.tile(np.array([[norm_factor, norm_factor]]), (pred.shape[0], 1))
    thrs = [1.0 * i / num_thrs for i in range(num_thrs)]
    avg_accs = []
    for thr in thrs:
        _, avg_acc, _ = mmpose_keypoint_pck_accuracy(pred, gt, mask, thr, nor)
        avg_accs.append(avg_acc)
    auc = 0
    for i in range(num_thrs):
        auc += 1.0 / num_thrs * avg_accs[i]
    return auc


def mmpose_compute_similarity_transform(source_points, target_points):
    """mesh_eval.py compute_similarity_transform: the similarity transform (sR, t) of the source points onto
    the target points, fitted on every point; returns the transformed source points."""
    assert target_points.shape[0] == source_points.shape[0]
    assert target_points.shape[1] == 3 and source_points.shape[1] == 3
    source_points = source_points.T
    target_points = target_points.T
    mu1 = source_points.mean(axis=1, keepdims=True)
    mu2 = target_points.mean(axis=1, keepdims=True)
    X1 = source_points - mu1
    X2 = target_points - mu2
    var1 = np.sum(X1 ** 2)
    K = X1.dot(X2.T)
    U, _, Vh = np.linalg.svd(K)
    V = Vh.T
    Z = np.eye(U.shape[0])
    Z[-1, -1] *= np.sign(np.linalg.det(U.dot(V.T)))
    R = V.dot(Z.dot(U.T))
    scale = np.trace(R.dot(K)) / var1
    t = mu2 - scale * (R.dot(mu1))
    source_points_hat = scale * R.dot(source_points) + t
    source_points_hat = source_points_hat.T
    return source_points_hat


def mmpose_keypoint_mpjpe(pred, gt, mask, alignment="none"):
    """keypoint_eval.py keypoint_mpjpe."""
    assert mask.any()
    if alignment == "none":
        pass
    elif alignment == "procrustes":
        pred = np.stack([mmpose_compute_similarity_transform(pred_i, gt_i) for pred_i, gt_i in zip(pred, gt)])
    elif alignment == "scale":
        pred_dot_pred = np.einsum("nkc,nkc->n", pred, pred)
        pred_dot_gt = np.einsum("nkc,nkc->n", pred, gt)
        scale_factor = pred_dot_gt / pred_dot_pred
        pred = pred * scale_factor[:, None, None]
    else:
        raise ValueError(f"Invalid value for alignment: {alignment}")
    error = np.linalg.norm(pred - gt, ord=2, axis=-1)[mask].mean()
    return error
