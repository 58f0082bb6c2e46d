"""A/B tables: extend-add (best MPI / variant, every variant incl. 1msg) and
DHT (accrete / MPI table), base vs new, median (range) over runs."""
import json,glob,os,statistics,sys
ead, dhd = sys.argv[1], sys.argv[2]
fmt=lambda xs: '%.2f (%.2f-%.2f)'%(statistics.median(xs),min(xs),max(xs))
ea={}
for f in glob.glob(ead+'/ea_*.json'):
    _,b,ring,m,r=os.path.basename(f)[:-5].split('_')
    for c in json.load(open(f))['cases']:
        v=c['variants']; best=min(v['mpi_alltoallv']['median_s'],v['mpi_p2p']['median_s'])
        for var in ('accrete_rpc','accrete_rpc_1msg','accrete_put','upcxx_rpc'):
            ea.setdefault((m,c['n'],var),{}).setdefault(b,[]).append(best/v[var]['median_s'])
print('| MPI | n | variant | base | new |'); print('| --- | --- | --- | --- | --- |')
for k in sorted(ea): print('| %s | %s | %s | '%k+' | '.join(fmt(ea[k][b]) for b in ('base','new'))+' |')
dh={}
for f in glob.glob(dhd+'/*.json'):
    b,m,p,r=os.path.basename(f)[:-5].split('_')
    res=json.load(open(f))['results']; base={x['value_bytes']:x for x in res if x['table']=='mpi'}
    for x in res:
        if x['table'] not in ('rpc','lz'): continue
        for ph,key in (('ins','inserts_per_s'),('find','finds_per_s')):
            dh.setdefault((m,p,x['table'],x['value_bytes'],ph),{}).setdefault(b,[]).append(x[key]/base[x['value_bytes']][key])
print(); print('| MPI | P | table | value | phase | base | new |'); print('| --- | --- | --- | --- | --- | --- | --- |')
for k in sorted(dh): print('| %s | %s | %s | %s | %s | '%k+' | '.join(fmt(dh[k][b]) for b in ('base','new'))+' |')
